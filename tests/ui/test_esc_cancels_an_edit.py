"""In a field's edit mode esc cancels: the field shows its text from before the edit and nothing is
applied (no pending change, nothing to undo, nothing to save); enter applies, and ctrl+z undoes what
enter applied. The same in the editor's form, the burst form and the tune form."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_editor import SIZE, field_input, status_text
from test_keys_not_text import _open
from ui_waiting import opened_editor, wait_for

from tui.ui.app import SpectopApp
from tui.ui.editor_app import EditorApp
from tui.widgets.edit_mode import FieldInput

TP = ("model", "tensor_parallel_size")
K = ("speculative", "num_speculative_tokens")


async def test_esc_in_the_editor_restores_the_field_and_applies_nothing(config_toml: Path) -> None:
    before = config_toml.read_text()
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
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


async def test_enter_applies_and_ctrl_z_undoes_it(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        tp = field_input(screen, *TP)
        tp.focus()
        await pilot.press("4", "enter")
        assert screen.document is not None and screen.document.get(TP) == 4
        await pilot.press("i", "backspace", "2", "escape")  # a later edit cancelled: 4 stays applied
        assert tp.value == "4" and screen.document.get(TP) == 4
        await pilot.press("ctrl+z")
        assert screen.document.get(TP) == 8 and tp.value == "8"


async def test_an_invalid_text_cancelled_leaves_no_error(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        field_input(screen, *TP).focus()
        await pilot.press("0")  # below 1: shown as an error while typed
        row = screen._rows[TP]
        await wait_for(pilot, lambda: row.has_class("-invalid"), "the error")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not row.has_class("-invalid"), "the error gone")
        assert "model.tensor_parallel_size: edit cancelled" in status_text(screen)


@pytest.mark.parametrize(
    ("key", "screen_name", "field_id", "value"),
    [("b", "BenchScreen", "requests", "32"), ("T", "TuneScreen", "values", "0,1,2,3,4")],
)
async def test_esc_restores_the_burst_and_tune_forms_fields(
    live_app: SpectopApp,
    key: str,
    screen_name: str,
    field_id: str,
    value: str,
) -> None:
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, key, screen_name)
        field = screen.query_one(f"#{field_id}", FieldInput)
        field.focus()
        await pilot.press("i", "backspace", "9", "escape")
        assert field.value == value and not field.editing
        await pilot.press("9", "escape")
        assert field.value == value
        await pilot.press("9", "enter")
        assert field.value == "9"
        assert type(live_app.screen).__name__ == screen_name  # esc in a field only cancelled the edit
