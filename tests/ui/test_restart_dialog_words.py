"""The dialogs ctrl+r opens say "save & restart", not plain "save" / "run"."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from ui_waiting import opened_editor, wait_for

from tui.screens.editor import EditorScreen
from tui.ui.editor_app import EditorApp
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog
from tui.widgets.edit_mode import FieldInput


def _texts(screen: object) -> str:
    return "\n".join(str(static.render()) for static in screen.query(Static))  # type: ignore[attr-defined]


async def test_ctrl_r_dialogs_say_save_and_restart(config_toml: Path) -> None:
    app = EditorApp(config_toml, restart_command=["true"])
    async with app.run_test(size=(80, 24)) as pilot:
        await opened_editor(pilot)
        field = app.screen.query_one("#field-scheduler--max_num_seqs FieldInput", FieldInput)
        field.focus()
        await pilot.press("i", "ctrl+a", "ctrl+k", "8", "enter")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffDialog))
        shown = _texts(app.screen)
        assert "Save & restart" in shown and "[y/enter] save & restart" in shown
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert "Save & restart: run the restart command?" in _texts(app.screen)
        assert "[y] restart" in _texts(app.screen)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen))
        await pilot.press("ctrl+s")  # a plain save says save
        await wait_for(
            pilot, lambda: isinstance(app.screen, EditorScreen) and "no changes" in _texts(app.screen)
        )
