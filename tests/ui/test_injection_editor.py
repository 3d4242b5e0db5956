"""Control characters in a config file do not reach the terminal raw from the config editor: not from the raw
view (a file with raw ESC bytes is a TOML syntax error, so it opens there), not from the field view and not
from the launch tab (a valid file can spell ESC as an escape, `\\u001b`, which the value then holds)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from test_injection import FROM_THE_DATA, HOSTILE, region_text, terminal_output
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import TabbedContent, TextArea
from ui_waiting import wait_for

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests.cli.test_sanitize_cli import hostile_config
from tui.screens.editor import EditorScreen
from tui.ui.editor_app import EditorApp

# The editor shows the file's text as it is (PWNED is text there); only the control characters must go.
CONTROLS = tuple(raw for raw in FROM_THE_DATA if not raw.isprintable())


async def assert_nothing_raw(pilot: Pilot[Any], widget: Widget, shown: str) -> None:
    app = pilot.app

    def settled() -> bool:
        drawn = region_text(app, widget)  # type: ignore[arg-type]
        return shown in drawn or any(raw in drawn for raw in CONTROLS)

    await wait_for(pilot, settled, timeout_s=10.0)
    drawn = region_text(app, widget)  # type: ignore[arg-type]
    assert shown in drawn
    for text in (drawn, terminal_output(app)):  # type: ignore[arg-type]
        for raw in CONTROLS:
            assert raw not in text, (raw, text)


@asynccontextmanager
async def editing(config: Path) -> AsyncIterator[tuple[Pilot[Any], EditorScreen]]:
    app = EditorApp(config)
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen.loaded)
        assert isinstance(app.screen, EditorScreen)
        yield pilot, app.screen


async def test_raw_view_of_a_file_with_control_bytes(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\nname = "{HOSTILE}"\n', encoding="utf-8")
    async with editing(config) as (pilot, screen):
        assert screen.query_one(TabbedContent).active == "raw-pane"
        await assert_nothing_raw(pilot, screen.query_one("#raw", TextArea), "]0;PWNED[2J]52;c;aGVsbG8=evil")


async def test_field_view_of_an_escaped_control_character(tmp_path: Path) -> None:
    async with editing(hostile_config(tmp_path / "config.toml")) as (pilot, screen):
        assert screen.document is not None
        await assert_nothing_raw(pilot, screen.query_one("#field-model--name Input"), "aGVsbG8=evil31m")


async def test_launch_tab_of_an_escaped_control_character(tmp_path: Path) -> None:
    async with editing(hostile_config(tmp_path / "config.toml")) as (pilot, screen):
        await pilot.press("f5")  # the launch tab
        await assert_nothing_raw(pilot, screen.query_one("#launch-text"), "evil")
