"""Every key after `i` / a digit lands, in order, when the keys arrive together as tmux or a paste sends
them: in a form field, in the raw view, and in the burst form (Pilot.press would wait after each key)."""

from __future__ import annotations

from pathlib import Path

from key_bursts import press_at_once
from test_editor import SIZE, field_input
from test_keys_not_text import _open
from textual.widgets import TextArea
from ui_waiting import opened_editor, wait_for

from tui.ui.app import SpectopApp
from tui.ui.editor_app import EditorApp
from tui.widgets.edit_mode import FieldInput

K = ("speculative", "num_speculative_tokens")


async def test_i_backspace_digit_enter_at_once_applies_the_digit(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        field = field_input(screen, *K)
        field.focus()
        await pilot.pause()
        await press_at_once(pilot, "i", "backspace", "5", "enter")
        assert screen.document is not None
        await wait_for(pilot, lambda: screen.document.get(K) == 5, "k = 5 applied")
        assert field.value == "5" and not field.editing


async def test_raw_view_keys_at_once_edit_the_line(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        await pilot.press("f3")
        raw = screen.query_one("#raw", TextArea)
        await wait_for(pilot, lambda: screen.focused is raw, "the raw view")
        row = raw.text.splitlines().index("num_speculative_tokens = 2")
        raw.move_cursor((row, 0))
        await press_at_once(pilot, "i", "end", "backspace", "backspace", " ", "5")
        edited = "num_speculative_tokens = 5"
        await wait_for(pilot, lambda: edited in raw.text.splitlines(), "the line edited")
        assert screen.document is not None and screen.document.get(K) == 5


async def test_a_burst_form_field_takes_keys_at_once(live_app: SpectopApp) -> None:
    async with live_app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, live_app, "b", "BenchScreen")
        field = screen.query_one("#requests", FieldInput)
        field.focus()
        await pilot.pause()
        await press_at_once(pilot, "i", "backspace", "backspace", "8", "left", "1", "enter")
        await wait_for(pilot, lambda: not field.editing, "the text applied")
        assert field.value == "18"
