"""Room on the dashboard: a grid of cards from 120 columns, else the table view (also on `v`)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from cut_figures import cut_figures, widget_lines
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.command import CommandPalette
from textual.widgets import DataTable, Static
from ui_waiting import Replayed, press_into, press_then_pause, spectop, wait_for, wait_for_dashboard

from tests.fleet.fake_fleet import scripted_app
from tui.fleet.table_rows import FleetRow
from tui.screens.dashboard import DashboardScreen, card_layout
from tui.screens.detail import DetailScreen
from tui.settings import EndpointSettings
from tui.state import TableChoice, remembered_table, state_path
from tui.telemetry.endpoint_row import EndpointRow, sorted_rows
from tui.ui.app import SpectopApp
from tui.widgets import endpoint_table, fleet_table
from tui.widgets.column_chooser import ColumnChooser
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.endpoint_table import Column, EndpointTable, single_line_cell
from tui.widgets.fleet_table import FleetTable
from tui.widgets.messages import AutopilotUpdated


@pytest.mark.parametrize(
    ("size", "count", "layout"),
    [
        ((80, 24), 2, (1, True)),  # the demo: two roomy cards
        ((80, 24), 3, (1, False)),  # compact, stacked
        ((120, 36), 3, (2, True)),  # a grid from 120 columns on
        ((200, 50), 3, (3, True)),
        ((200, 50), 12, (3, True)),
        ((160, 50), 16, (2, False)),
        ((80, 24), 6, None),  # cards do not fit: the table
    ],
)
def test_card_layout_uses_the_room(
    size: tuple[int, int], count: int, layout: tuple[int, bool] | None
) -> None:
    assert card_layout(*size, count) == layout


def test_rows_sort_with_unknown_figures_last_either_way_and_names_by_their_numbers() -> None:
    rows = [
        EndpointRow("b", "up", tokens_per_s=10.0),
        EndpointRow("a", "down"),
        EndpointRow("c", "up", tokens_per_s=30.0, worst_alert="critical", alerts=1),
    ]
    assert [row.name for row in sorted_rows(rows, "tokens_per_s")] == ["b", "c", "a"]
    assert [row.name for row in sorted_rows(rows, "tokens_per_s", reverse=True)] == ["c", "b", "a"]
    assert [row.name for row in sorted_rows(rows, "status")] == ["a", "c", "b"]  # worst first
    names = [EndpointRow(name, "up") for name in ("node-10", "Node-2", "node-1")]  # numbers as numbers
    assert [row.name for row in sorted_rows(names, "name")] == ["node-1", "Node-2", "node-10"]


def test_the_fleet_table_is_the_endpoint_table_extended() -> None:
    assert issubclass(FleetTable, EndpointTable) and issubclass(FleetRow, EndpointRow)

    def figures(columns: tuple[Column, ...]) -> list[tuple[object, ...]]:
        return [(column.sort, column.header, column.figure) for column in columns if column.figure]

    assert figures(fleet_table.NARROW_COLUMNS) == figures(endpoint_table.NARROW_COLUMNS)
    assert figures(fleet_table.WIDE_COLUMNS) == figures(endpoint_table.WIDE_COLUMNS)
    row = FleetRow(name="10.1.0.2:8000", status="up", key="10.1.0.2:8000", group="g", tokens_per_s=12.0)
    assert sorted_rows([row], "tokens_per_s") == [row]  # the endpoint rows' sorting


async def test_table_view_sorts_opens_the_detail_and_shows_the_autopilots_line_of_the_cursors_row(
    replayed: Replayed,
) -> None:
    """A table row has no room for the autopilot's line: the cursor row's shows above the table."""
    async with replayed() as (pilot, app):
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DashboardScreen) and screen.view == "cards"
        lines = {"mtp-on": "autopilot: watching · k=3 now", "mtp-off": "autopilot: canary k=2, 1 min"}
        screen.post_message(AutopilotUpdated(lines))
        await press_then_pause(pilot, "v")
        table = screen.query_one(EndpointTable)
        assert screen.view == "table" and table.has_focus and table.row_count == 3
        assert table.endpoints[0] == "mtp-on"  # the critical alert first (status sort)
        line = screen.query_one("#group-advice", Static)

        def shown() -> str:
            return str(line.render()) if line.display else ""

        await wait_for(pilot, lambda: shown() == f"mtp-on: {lines['mtp-on']}", "the line of the first row")
        await press_then_pause(pilot, ">", ">")  # status → name → tok/s (no model column at 80 to sort)
        assert table.sort_column == "tokens_per_s"
        speeds = [float(table.get_cell(name, "tokens_per_s").plain) for name in table.endpoints]
        assert speeds == sorted(speeds)
        await press_then_pause(pilot, "i")
        assert table.endpoints == ["mtp-on", "mtp-off", "llama-draft"]
        assert "▼" in str(table.columns["tokens_per_s"].label)  # type: ignore[index]
        await pilot.press("down")
        await wait_for(pilot, lambda: shown() == f"mtp-off: {lines['mtp-off']}", "the line of the next row")
        await press_then_pause(pilot, "enter")
        assert isinstance(app.screen, DetailScreen) and app.screen.endpoint == "mtp-off"
        await press_then_pause(pilot, "escape", "v")
        assert screen.view == "cards" and isinstance(app.focused, EndpointCard)
        await wait_for(pilot, lambda: not line.display, "no line above the cards")


async def test_a_tick_redraws_only_the_cells_that_changed(
    replayed: Replayed, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replayed((120, 36)) as (pilot, app):
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await press_then_pause(pilot, "v")
        table = screen.query_one(EndpointTable)
        updates: list[tuple[object, object]] = []
        added: list[object] = []
        real_update, real_add = DataTable.update_cell, DataTable.add_row

        def update_cell(
            self: DataTable, row: object, column: object, value: object, **kwargs: object
        ) -> None:
            updates.append((row, column))
            real_update(self, row, column, value, **kwargs)  # type: ignore[arg-type]

        def add_row(self: DataTable, *cells: object, **kwargs: object) -> object:
            added.append(kwargs.get("key"))
            return real_add(self, *cells, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(DataTable, "update_cell", update_cell)
        monkeypatch.setattr(DataTable, "add_row", add_row)
        entries = [(row, table._trends[name]) for name, row in table._rows.items()]
        table.set_rows(entries)  # the same figures again
        assert updates == [] and added == []
        mtp_off, trend = next(entry for entry in entries if entry[0].name == "mtp-off")
        table.set_rows([(dataclasses.replace(mtp_off, tokens_per_s=999.0), trend)])
        assert updates == [("mtp-off", "tokens_per_s")] and added == []


def _nowhere(names: list[str]) -> list[EndpointSettings]:
    return [EndpointSettings(name=name, url=f"http://127.0.0.1:{9 + i}") for i, name in enumerate(names)]


async def test_the_table_comes_by_itself_when_cards_do_not_fit_its_text_widths_hold_the_cells() -> None:
    app = spectop(*_nowhere([f"node-{index:02}" for index in range(8)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DashboardScreen) and screen.view == "table"
        assert screen.query_one(EndpointTable).row_count == 8
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert screen.view == "cards"
        # The text columns are sized from the rows' strings (not their cells, too slow for a fleet): never
        # narrower than the cells themselves.
        rows = [
            EndpointRow(
                "127.0.0.1:38531", "restarting", worst_alert="warning", model="deepseek-ai/DeepSeek-V3"
            ),
            EndpointRow("a", "down", worst_alert="critical", backend="vllm"),
            EndpointRow("node-with-a-longer-name:8000", "no data"),
        ]
        table = screen.query_one(EndpointTable)
        widths = table.text_widths(rows)
        for column in endpoint_table.WIDE_COLUMNS:
            if column.sort in widths:
                cells = [table.cell(column, row, (), table._styles()).cell_len for row in rows]
                assert widths[column.sort] >= max(cells), column.sort


@pytest.mark.parametrize(
    ("size", "host", "count"),
    [
        ((200, 50), "127.0.0.1", 8),
        ((80, 24), "127.0.0.1", 8),
        ((80, 24), "gpu-node-17.inference.example.com", 30),  # a scrollbar takes its room
        ((80, 24), "gpu-node-17.inference.example.com", 8),
    ],
    ids=["200x50", "80x24", "80x24-scrolling", "80x24-long-names"],
)
async def test_table_names_are_whole_with_a_gap_or_keep_their_port(
    size: tuple[int, int], host: str, count: int
) -> None:
    """Two sims on 38531 and 38532 read apart: `127.0.0.1:38531` whole, or a long name `…ple.com:38531`."""
    names = [f"{host}:{38531 + index}" for index in range(count)]
    app = spectop(*_nowhere(names))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        if screen.view != "table":
            await pilot.press("v")
        table = screen.query_one(EndpointTable)
        await wait_for(pilot, lambda: table.row_count == count and bool(table.size.width))
        await pilot.pause()
        lines = next(lines for name, lines in widget_lines(app).items() if name.startswith("EndpointTable"))
        for name in names[: size[1] - 6]:  # those on the screen
            port = name.rsplit(":", 1)[1]
            shown = next((word for line in lines for word in line.split() if f":{port}" in word), None)
            assert shown is not None, f"no row shows port {port}:\n" + "\n".join(lines)
            assert shown == name or (shown.startswith("…") and name.endswith(shown[1:])), shown
        assert not cut_figures(app)


def _app() -> SpectopApp:
    return spectop(*_nowhere(["e0", "e1", "e2"]), remember_theme_choice=True)


def _headers(table: EndpointTable) -> list[str]:
    return [str(column.label).strip() for column in table.columns.values()]


async def _table_view(pilot, app: SpectopApp) -> EndpointTable:  # type: ignore[no-untyped-def]
    await wait_for_dashboard(pilot)
    await pilot.press("v")
    table = app.screen.query_one("#table", EndpointTable)
    await wait_for(pilot, lambda: app.focused is table)
    return table


async def test_choose_and_order_columns_or_escape_then_sort_only_by_visible_ones() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await _table_view(pilot, app)
        before = _headers(table)
        assert before[:3] == ["status ▲", "endpoint", "tok/s"]
        await press_into(pilot, DashboardScreen, "c", "space", "escape")  # the columns as they were
        assert _headers(table) == before
        await press_into(pilot, ColumnChooser, "c")
        await pilot.press("space")  # status hidden
        await pilot.press("down", "down", "shift+up")  # tok/s before endpoint
        await press_into(pilot, DashboardScreen, "enter")
        headers = _headers(table)
        assert "status" not in " ".join(headers) and headers[:2] == ["▲tok/s", "endpoint"]  # sort moved
        assert table.sort_column == "tokens_per_s"
        seen = set()
        for _ in range(10):
            await pilot.press("greater_than_sign")
            seen.add(table.sort_column)
        assert "status" not in seen and seen == set(table.visible_sorts)
        assert len([h for h in _headers(table) if "▲" in h or "▼" in h]) == 1
        await pilot.press("i")
        assert sum("▼" in h for h in _headers(table)) == 1
    remembered = remembered_table()
    assert remembered is not None and remembered.columns[:2] == ["tokens_per_s", "name"]
    assert "status" not in remembered.columns and remembered.reverse


async def test_the_choice_is_remembered_for_the_next_run_and_the_palette_lists_the_actions() -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    choice = TableChoice(columns=["name", "kv"], sort="kv")
    path.write_text(json.dumps({"theme": "spectop-dark", "table": choice.model_dump()}))
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await _table_view(pilot, app)
        assert _headers(table) == ["endpoint", "▲KV"]
        titles = {command.title for command in app.get_system_commands(app.screen)}  # the palette's actions
        assert {"Tune", "Table view", "Table columns", "Bench", "Help"} <= titles
        assert "Log viewer" in titles  # the dashboard opens the focused endpoint's log
        await press_into(pilot, CommandPalette, "ctrl+p")
    assert json.loads(path.read_text())["theme"] == "spectop-dark"  # the other choices are kept


# --- one-line cells made directly (`single_line_cell`) are what DataTable's Rich path makes of them,
# character and style, in the fleet table and the dashboard's

Cells = list[tuple[str, Style | None]]


def characters(lines: list[list[Segment]]) -> list[Cells]:
    return [[(char, segment.style) for segment in line for char in segment.text] for line in lines]


def compare_screen(table: EndpointTable) -> int:
    """How many cells of the rows on the screen were made both ways (cursor and hover too), all equal."""
    compared = 0
    cursor_row = table.cursor_coordinate.row
    for row_index in range(min(table.row_count, table.size.height)):
        row_style = table._get_row_style(row_index, table.rich_style)
        for column_index, column in enumerate(table.ordered_columns):
            width = column.get_render_width(table)
            row_key = table._row_locations.get_key(row_index)
            value = table._data[row_key][column.key]
            assert isinstance(value, Text)
            for cursor, hover in ((row_index == cursor_row, False), (False, True)):
                fast = table._single_line_cell(
                    value, row_index, column_index, row_style, width, cursor, hover
                )
                slow = DataTable._render_cell(table, row_index, column_index, row_style, width, cursor, hover)
                if fast is None:
                    continue
                assert characters(fast) == characters(slow), (row_index, column.key, value.plain)
                compared += 1
    return compared


@pytest.mark.parametrize("size", [(200, 50), (80, 24)])
async def test_fleet_table_cells_made_directly_equal_datatables(size: tuple[int, int]) -> None:
    app = scripted_app(40)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query(FleetTable)))
        table = app.screen.query_one(FleetTable)
        await wait_for(pilot, lambda: len(table.endpoints) == 40)
        await press_then_pause(pilot, "down", "down")
        assert compare_screen(table) > 100


def test_a_cell_that_does_not_fit_or_has_lines_is_left_to_datatable() -> None:
    console = Console(width=80)
    plain = Style()
    assert single_line_cell(console, Text("12345678"), 8, 1, plain, plain) is None  # 6 columns inside
    assert single_line_cell(console, Text("a\nb"), 8, 1, plain, plain) is None
    assert single_line_cell(console, Text("a", justify="right"), 8, 1, plain, plain) is None
    (line,) = single_line_cell(console, Text("ab", style="bold"), 6, 1, plain, plain) or [[]]
    assert "".join(segment.text for segment in line) == " ab   "
