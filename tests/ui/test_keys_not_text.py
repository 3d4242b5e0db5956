"""A letter is a command unless the user chose to type (enter, i or a digit; esc cancels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from test_editor import field_input, status_text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, Select, Static, TextArea
from ui_waiting import editing, press_at_once, press_into, wait_for, wait_for_dashboard

from tui.screens.help import HelpScreen
from tui.ui.app import SpectopApp
from tui.widgets.edit_mode import FieldInput

SIZE = (80, 24)


def field_values(screen: Screen[Any]) -> dict[str, object]:
    return {
        f"{index}:{widget.id}": widget.text if isinstance(widget, TextArea) else widget.value
        for index, widget in enumerate(screen.query("Input, Select, TextArea"))
        if isinstance(widget, Input | Select | TextArea)
    }


async def _open(pilot: Pilot[Any], app: SpectopApp, key: str, name: str) -> Screen[Any]:
    await wait_for_dashboard(pilot)
    await pilot.press(key)
    await wait_for(pilot, lambda: type(app.screen).__name__ == name and getattr(app.screen, "loaded", True))
    await pilot.pause()
    return app.screen


@pytest.mark.parametrize(
    ("key", "name", "field"),
    [("e", "EditorScreen", None), ("b", "BenchScreen", "#requests"), ("T", "TuneScreen", None)],
    ids=["editor", "burst-form", "tune-form"],
)
async def test_question_mark_and_q_on_a_fresh_form_are_commands(
    live_app: SpectopApp, config_toml: Path, key: str, name: str, field: str | None
) -> None:
    before = config_toml.read_bytes()
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, key, name)
        if field is not None:
            screen.query_one(field, FieldInput).focus()  # a text field, as after tab
        await wait_for(pilot, lambda: isinstance(screen.focused, FieldInput))  # the form's first field
        fields = field_values(screen)
        await press_into(pilot, HelpScreen, "question_mark")  # the help, every field as it was
        await pilot.press("escape")
        await wait_for(pilot, lambda: live_app.screen is screen)
        assert field_values(screen) == fields
        await pilot.press("q")  # quits
        await wait_for(pilot, lambda: not live_app.is_running)
        assert field_values(screen) == fields
    assert config_toml.read_bytes() == before


async def test_q_in_the_raw_view_quits_and_types_nothing(config_toml: Path) -> None:
    async with editing(config_toml) as (pilot, screen):
        await pilot.press("f3")  # the raw view: read-only until i
        raw = screen.query_one("#raw", TextArea)
        before = raw.text
        await pilot.press("q")
        await wait_for(pilot, lambda: not pilot.app.is_running)
        assert raw.text == before


async def test_a_digit_on_the_tune_form_replaces_the_value_and_errors_name_what_they_refuse(
    live_app: SpectopApp,
) -> None:
    async with live_app.run_test(size=(120, 36)) as pilot:
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
        # the form's errors name the value they refuse
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
    ones = 0

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


TP = ("model", "tensor_parallel_size")
K = ("speculative", "num_speculative_tokens")


async def test_in_the_editor_esc_cancels_an_edit_enter_applies_it_and_keys_at_once_land_in_order(
    config_toml: Path,
) -> None:
    before = config_toml.read_text()
    async with editing(config_toml) as (pilot, screen):
        tp = field_input(screen, *TP)
        tp.focus()
        await pilot.press("7", "5", "escape")  # a digit starts a new value; esc drops it
        assert tp.value == "8" and not tp.editing
        k = field_input(screen, *K)
        k.focus()
        await pilot.press("i", "backspace", "5", "escape")
        assert k.value == "2"
        await pilot.press("tab")  # leaving the field applies nothing either
        await wait_for(pilot, lambda: screen.focused is not k, "the focus moved on")
        assert screen.document is not None and screen.document.text == before
        assert not screen.has_unsaved_changes() and not screen._rows[K].has_class("-invalid")
        await pilot.press("ctrl+z")
        assert status_text(screen) == "nothing to undo in the form"
        tp.focus()  # an invalid text cancelled leaves no error
        await pilot.press("0")  # below 1: shown as an error while typed
        row = screen._rows[TP]
        await wait_for(pilot, lambda: row.has_class("-invalid"), "the error")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not row.has_class("-invalid"), "the error gone")
        assert "model.tensor_parallel_size: edit cancelled" in status_text(screen)
        await pilot.press("4", "enter")  # enter applies; ctrl+z undoes it
        assert screen.document.get(TP) == 4
        await pilot.press("i", "backspace", "2", "escape")  # a later edit cancelled: 4 stays applied
        assert tp.value == "4" and screen.document.get(TP) == 4
        await pilot.press("ctrl+z")
        assert screen.document.get(TP) == 8 and tp.value == "8"
        # keys after `i` / a digit land in order when they arrive together (tmux, a paste)
        k.focus()
        await pilot.pause()
        await press_at_once(pilot, "i", "backspace", "5", "enter")
        await wait_for(pilot, lambda: screen.document.get(K) == 5, "k = 5 applied")
        assert k.value == "5" and not k.editing
        await pilot.press("f3")
        raw = screen.query_one("#raw", TextArea)
        await wait_for(pilot, lambda: screen.focused is raw, "the raw view")
        raw.move_cursor((raw.text.splitlines().index("num_speculative_tokens = 5"), 0))
        await press_at_once(pilot, "i", "end", "backspace", "backspace", " ", "7")
        edited = "num_speculative_tokens = 7"
        await wait_for(pilot, lambda: edited in raw.text.splitlines(), "the line edited")
        assert screen.document is not None and screen.document.get(K) == 7


@pytest.mark.parametrize(
    ("key", "screen_name", "field_id", "value"),
    [("b", "BenchScreen", "requests", "32"), ("T", "TuneScreen", "values", "0,1,2,3,4")],
)
async def test_esc_restores_the_burst_and_tune_forms_fields(
    live_app: SpectopApp, key: str, screen_name: str, field_id: str, value: str
) -> None:
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, key, screen_name)
        field = screen.query_one(f"#{field_id}", FieldInput)
        field.focus()
        await pilot.press("i", "backspace", *"9?q")
        assert field.value.endswith("9?q") and field.editing  # in edit mode the letters are text
        await pilot.press("escape")
        assert field.value == value and not field.editing
        await pilot.press("9", "escape")
        assert field.value == value
        await pilot.press("9", "enter")
        assert field.value == "9"
        await press_at_once(pilot, "i", "backspace", "backspace", "8", "left", "1", "enter")  # as tmux sends
        await wait_for(pilot, lambda: not field.editing, "the text applied")
        assert field.value == "18"
        assert type(live_app.screen).__name__ == screen_name  # esc in a field only cancelled the edit
