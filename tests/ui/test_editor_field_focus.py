"""The editor's focus is seen and moved as in any terminal form: ↑↓ go from field to field, the form
scrolls to the focused field, its key is marked `▶` (no colour needed), and the status line names it.
A digit typed after ↓↓↓ edits the field the arrows reached, never the first one."""

from __future__ import annotations

from pathlib import Path

import pytest
from key_bursts import press_at_once
from test_editor import SIZE, save_to_the_diff, status_text
from textual.containers import VerticalScroll
from textual.widgets import Label, Select
from ui_waiting import opened_editor, wait_for

from tui.configs.document import dotted
from tui.screens.editor import FIELD_KEYS, EditorScreen
from tui.screens.help import key_rows
from tui.ui.editor_app import EditorApp
from tui.widgets.config_field import FOCUS_MARK, ConfigFieldRow
from tui.widgets.edit_mode import HELP_ROW


def focused_row(screen: EditorScreen) -> ConfigFieldRow | None:
    return screen._row_of(screen.focused) if screen.focused is not None else None


def marked_rows(screen: EditorScreen) -> list[ConfigFieldRow]:
    return [
        row
        for row in screen._rows.values()
        if str(row.query_one(".field-key", Label).render()).startswith(FOCUS_MARK)
    ]


async def test_arrows_then_a_digit_edit_the_field_the_arrows_reached(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        rows = list(screen._rows)
        assert rows[0] == ("model", "name") and rows[3] == ("model", "max_model_len")
        await press_at_once(pilot, "down", "down", "down", "4", "enter")  # as fast as tmux sends them
        assert screen.document is not None
        await wait_for(pilot, lambda: screen.document.get(rows[3]) == 4, "max_model_len = 4")
        assert screen.document.get(rows[0]) == "deepseek-ai/DeepSeek-V3"
        dialog = await save_to_the_diff(pilot)
        assert "+max_model_len = 4" in dialog.diff and "name =" not in dialog.diff


async def test_the_focused_field_is_marked_named_and_in_view(
    config_toml: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")  # the mark is a shape, not a colour
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        form = screen.query_one("#form-fields", VerticalScroll)
        await wait_for(pilot, lambda: marked_rows(screen) == [screen._rows[("model", "name")]], "name marked")
        assert "model.name" in status_text(screen)
        await pilot.press("down")
        dtype = screen.query_one("#field-model--dtype Select", Select)
        assert screen.focused is dtype and not dtype.expanded  # ↓ moves on; enter opens a choice
        target = ("speculative", "acceptance_threshold")
        row = screen._rows[target]
        await press_at_once(pilot, *["down"] * (list(screen._rows).index(target) - 1))  # at tmux speed
        await wait_for(pilot, lambda: focused_row(screen) is row, "down the form, field after field")
        await wait_for(pilot, lambda: marked_rows(screen) == [row], "only the focused row marked")
        assert status_text(screen).startswith(f"{dotted(target)}: enter or i edits the field")
        in_view = lambda: form.content_region.contains_region(row.region)  # noqa: E731  (with its help line)
        await wait_for(pilot, in_view, "the focused field and its help in view")
        await pilot.press("up")
        above = list(screen._rows.values())[list(screen._rows).index(target) - 1]
        await wait_for(pilot, lambda: marked_rows(screen) == [above], "the mark moved up")
        assert dotted(above.spec.path) in status_text(screen)


async def test_the_help_says_how_focus_moves_and_how_editing_starts_and_ends(
    config_toml: Path,
) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        await wait_for(pilot, lambda: focused_row(screen) is not None, "a focused field")
        rows = {row.text: row.keys for row in key_rows(screen)}
        assert set(rows[FIELD_KEYS]) == {"↑", "↓"}
        keys, text = HELP_ROW
        assert set(keys) <= set(rows[text]) and "⏎ applies, esc cancels" in text and "0-9" in keys


async def test_page_keys_move_the_focus_a_page_of_fields(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        form = screen.query_one("#form-fields", VerticalScroll)
        rows = list(screen._rows.values())
        await wait_for(pilot, lambda: focused_row(screen) is rows[0], "the first field")
        await pilot.press("pagedown")
        reached = focused_row(screen)
        assert reached is not None and rows.index(reached) > 1
        await press_at_once(pilot, *["pagedown"] * len(rows))  # the focus never leaves the page in view
        await wait_for(pilot, lambda: focused_row(screen) is rows[-1], "the last field")
        await wait_for(pilot, lambda: form.content_region.contains_region(rows[-1].region), "in view")
        await pilot.press("pageup")
        assert focused_row(screen) not in (rows[-1], None)
