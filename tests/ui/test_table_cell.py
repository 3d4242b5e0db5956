"""The tables' one-line cells made directly (tui/widgets/table_cell.py) are what DataTable's Rich path
makes of them, character and style, in the fleet table and the dashboard's."""

from __future__ import annotations

import pytest
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable

from tests.fleet.fake_fleet import scripted_app
from tests.ui.ui_waiting import wait_for
from tui.widgets.endpoint_table import EndpointTable
from tui.widgets.fleet_table import FleetTable
from tui.widgets.table_cell import single_line_cell

Cells = list[tuple[str, Style | None]]


def characters(lines: list[list[Segment]]) -> list[Cells]:
    return [[(char, segment.style) for segment in line for char in segment.text] for line in lines]


def compare_screen(table: EndpointTable) -> int:
    """Every cell of the rows on the screen, made both ways (cursor and hover as DataTable would draw
    them); how many were compared. Fails at the first difference."""
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
        await pilot.press("down", "down")
        await pilot.pause()
        assert compare_screen(table) > 100


def test_a_cell_that_does_not_fit_or_has_lines_is_left_to_datatable() -> None:
    from rich.console import Console

    console = Console(width=80)
    plain = Style()
    assert single_line_cell(console, Text("12345678"), 8, 1, plain, plain) is None  # 6 columns inside
    assert single_line_cell(console, Text("a\nb"), 8, 1, plain, plain) is None
    assert single_line_cell(console, Text("a", justify="right"), 8, 1, plain, plain) is None
    (line,) = single_line_cell(console, Text("ab", style="bold"), 6, 1, plain, plain) or [[]]
    assert "".join(segment.text for segment in line) == " ab   "
