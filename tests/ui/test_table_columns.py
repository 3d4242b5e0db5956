"""The table view's columns are the user's (choose, order, sort only by visible ones with
the ▲/▼ marker, remembered in state.json), and the command palette lists every action of the screen."""

from __future__ import annotations

import json

import pytest
from textual.command import CommandPalette
from ui_waiting import wait_for, wait_for_dashboard

from tui.paths import themes_dir
from tui.screens.dashboard import DashboardScreen
from tui.settings import EndpointSettings, Settings
from tui.state import TableChoice, remembered_table, state_path
from tui.ui.app import SpectopApp
from tui.widgets.column_chooser import ColumnChooser
from tui.widgets.endpoint_table import EndpointTable


def _app(remember: bool = True) -> SpectopApp:
    endpoints = [EndpointSettings(name=f"e{i}", url=f"http://127.0.0.1:{9 + i}") for i in range(3)]
    settings = Settings(poll_interval_s=60, endpoints=endpoints)
    return SpectopApp(settings, theme_folders=[themes_dir()], remember_theme_choice=remember)


def _headers(table: EndpointTable) -> list[str]:
    return [str(column.label).strip() for column in table.columns.values()]


async def _table_view(pilot, app: SpectopApp) -> EndpointTable:  # type: ignore[no-untyped-def]
    await wait_for_dashboard(pilot)
    await pilot.press("v")
    table = app.screen.query_one("#table", EndpointTable)
    await wait_for(pilot, lambda: app.focused is table)
    return table


async def test_choose_and_order_columns_then_sort_only_by_visible_ones() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await _table_view(pilot, app)
        assert _headers(table)[:3] == ["status ▲", "endpoint", "tok/s"]
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ColumnChooser))
        await pilot.press("space")  # status hidden
        await pilot.press("down", "down", "shift+up")  # tok/s before endpoint
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        headers = _headers(table)
        assert "status" not in " ".join(headers) and headers[:2] == ["▲tok/s", "endpoint"]  # sort moved
        assert table.sort_column == "tokens_per_s"
        seen = set()
        for _ in range(10):
            await pilot.press("greater_than_sign")
            seen.add(table.sort_column)
        assert "status" not in seen and seen == set(table.visible_sorts)
        marked = [h for h in _headers(table) if "▲" in h or "▼" in h]
        assert len(marked) == 1
        await pilot.press("i")
        assert sum("▼" in h for h in _headers(table)) == 1
    remembered = remembered_table()
    assert remembered is not None and remembered.columns[:2] == ["tokens_per_s", "name"]
    assert "status" not in remembered.columns and remembered.reverse


async def test_the_choice_is_remembered_for_the_next_run() -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {"theme": "spectop-dark", "table": TableChoice(columns=["name", "kv"], sort="kv").model_dump()}
        )
    )
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await _table_view(pilot, app)
        assert _headers(table) == ["endpoint", "▲KV"]
    assert json.loads(path.read_text())["theme"] == "spectop-dark"  # the other choices are kept


async def test_escape_leaves_the_columns_as_they_were() -> None:
    app = _app(remember=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = await _table_view(pilot, app)
        before = _headers(table)
        await pilot.press("c", "space", "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        assert _headers(table) == before


@pytest.mark.parametrize("wanted", ["Tune", "Table view", "Table columns", "Bench", "Help"])
async def test_the_palette_lists_the_screens_actions(wanted: str) -> None:
    app = _app(remember=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _table_view(pilot, app)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert wanted in titles
        assert "Log viewer" in titles  # the dashboard opens the focused endpoint's log
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
