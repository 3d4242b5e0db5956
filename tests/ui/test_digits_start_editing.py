"""A digit typed on a field in command mode starts editing it (issue 24: "1" was swallowed on the tune form).

Fields take text only once the user chose to type (`enter` / `i`, tests/ui/test_keys_not_text.py), so a
"1" on the freshly opened tune form did nothing, without a word. A digit (or `.`, `,`, `-`) is never a
command there: it now enters edit mode and is typed. A digit that is a key of the screen (the detail
screen's `1` for one minute of charts) stays the command.
"""

from __future__ import annotations

from typing import ClassVar

from test_keys_not_text import _open, config, live_app  # noqa: F401  (fixtures)
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from ui_waiting import wait_for

from tui.ui.app import SpectopApp
from tui.widgets.edit_mode import FieldInput

SIZE = (120, 36)


async def test_a_digit_on_the_tune_form_is_typed(live_app: SpectopApp) -> None:  # noqa: F811
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, "T", "TuneScreen")
        values = screen.query_one("#values", FieldInput)
        await wait_for(pilot, lambda: screen.focused is values)  # the form opens on the values field
        assert not values.editing
        await pilot.press("1")
        assert values.editing and values.value == "0,1,2,3,41"
        await pilot.press("escape")
        loads = screen.query_one("#loads", FieldInput)
        loads.focus()
        await pilot.press(*",16")
        assert loads.value == "1,8,16" and loads.editing
        await pilot.press("escape", "a")  # a letter is still the screen's command: nothing typed
        assert loads.value == "1,8,16" and not loads.editing


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
        assert field.value == "52" and field.editing  # "2" is no key here: typed
