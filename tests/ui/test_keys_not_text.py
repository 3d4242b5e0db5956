"""A letter is a command unless the user chose to type (enter or i, esc cancels).

On a freshly opened editor, burst form and tune form, `?` opens the help and `q` quits, and no field's
value changes; `i` then types into the focused field, esc cancels and the letters are keys again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, Select, TextArea
from ui_waiting import wait_for, wait_for_dashboard

from tui.screens.help import HelpScreen
from tui.ui.app import SpectopApp
from tui.ui.editor_app import EditorApp
from tui.widgets.edit_mode import FieldInput

SIZE = (80, 24)


def field_values(screen: Screen[Any]) -> dict[str, object]:
    """Every field's value on the screen (inputs, selects, the raw text)."""
    values: dict[str, object] = {}
    for index, widget in enumerate(screen.query("Input, Select, TextArea")):
        if isinstance(widget, Input | Select | TextArea):
            key = f"{index}:{widget.id}"
            values[key] = widget.text if isinstance(widget, TextArea) else widget.value
    return values


async def help_then_quit(pilot: Pilot[Any], screen: Screen[Any]) -> None:
    """`?` shows the help and leaves every field as it was; `q` quits the app."""
    app = pilot.app
    before = field_values(screen)
    assert isinstance(screen.focused, FieldInput | Select | TextArea), screen.focused
    await pilot.press("question_mark")
    await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
    await pilot.press("escape")
    await wait_for(pilot, lambda: app.screen is screen)
    assert field_values(screen) == before
    await pilot.press("q")
    await wait_for(pilot, lambda: not app.is_running)
    assert field_values(screen) == before


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
        await help_then_quit(pilot, screen)
    assert config_toml.read_bytes() == before


async def test_i_types_into_a_field_and_esc_gives_the_letters_back(live_app: SpectopApp) -> None:
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, "T", "TuneScreen")
        field = screen.query_one("#loads", FieldInput)
        field.focus()
        await pilot.press("a")  # apply best: nothing measured yet, and nothing typed
        assert field.value == "1,8" and not field.editing
        await pilot.press("i", "ctrl+a", "ctrl+k", *"1,4?q")
        assert field.value == "1,4?q" and field.editing  # in edit mode the letters are text
        await pilot.press("escape")
        assert not field.editing and isinstance(live_app.screen, type(screen))  # esc only left the field
        assert field.value == "1,8"  # and cancelled the edit
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(live_app.screen, HelpScreen))
        assert field.value == "1,8"


async def test_q_in_the_raw_view_quits_and_types_nothing(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "loaded", False))
        await pilot.press("f3")  # the raw view: read-only until i
        raw = app.screen.query_one("#raw", TextArea)
        before = raw.text
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)
        assert raw.text == before
