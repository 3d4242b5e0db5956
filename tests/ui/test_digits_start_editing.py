"""A digit typed on a field in command mode starts a new value, as typing into a spreadsheet cell does.

Fields take text only once the user chose to type (`enter` / `i`, tests/ui/test_keys_not_text.py), so a
"1" on the freshly opened tune form did nothing, without a word; then it was appended to the values
(`0,1,2,3,41`). A digit (or `.`, `,`, `-`) is never a command there: it enters edit mode and replaces
the text (`i` / `enter` edit the text as it is). A digit that is a key of the screen (the detail
screen's `1` for one minute of charts) stays the command. The tune form's errors name what they refuse.
"""

from __future__ import annotations

from typing import ClassVar

from test_keys_not_text import _open
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static
from ui_waiting import wait_for

from tui.ui.app import SpectopApp
from tui.widgets.edit_mode import FieldInput

SIZE = (120, 36)


async def test_a_digit_on_the_tune_form_replaces_the_value(live_app: SpectopApp) -> None:
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, "T", "TuneScreen")
        values = screen.query_one("#values", FieldInput)
        await wait_for(pilot, lambda: screen.focused is values)  # the form opens on the values field
        assert not values.editing
        await pilot.press("1")
        assert values.editing and values.value == "1"
        await pilot.press(*",3", "enter")
        assert values.value == "1,3" and not values.editing
        loads = screen.query_one("#loads", FieldInput)
        loads.focus()
        await pilot.press("i", *",16")  # i edits the text as it is
        assert loads.value == "1,8,16" and loads.editing
        await pilot.press("enter", "a")  # a letter is still the screen's command: nothing typed
        assert loads.value == "1,8,16" and not loads.editing


async def test_the_tune_forms_errors_name_the_value_they_refuse(live_app: SpectopApp) -> None:
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, "T", "TuneScreen")
        progress = screen.query_one("#progress", Static)
        for field_id, typed, error in (
            ("values", "0,41", "values: 41 is outside vLLM's 1..16 draft tokens"),
            ("values", "0,x", "values: 'x' is not a whole number"),
            ("loads", "0", "loads: 0 is below 1"),
            ("requests", "0", "n: 0 is below 1"),
            ("requests", "2.5", "n: '2.5' is not a whole number"),
        ):
            field = screen.query_one(f"#{field_id}", FieldInput)
            field.focus()
            await pilot.press(*typed, "enter", "ctrl+r")
            await wait_for(pilot, lambda error=error: error in str(progress.render()), error)
            field.value = {"values": "0,1,2", "loads": "1", "requests": "4"}[field_id]


class _BoundDigit(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("1", "one", "one")]

    def __init__(self) -> None:
        super().__init__()
        self.ones = 0

    def compose(self) -> ComposeResult:
        yield FieldInput("5", id="field")

    def action_one(self) -> None:
        self.ones += 1


async def test_a_digit_bound_on_the_screen_stays_a_command() -> None:
    app = _BoundDigit()
    async with app.run_test() as pilot:
        field = app.query_one(FieldInput)
        field.focus()
        await pilot.press("1", "2")
        assert app.ones == 1  # "1" is the command
        assert field.value == "2" and field.editing  # "2" is no key here: a new value
