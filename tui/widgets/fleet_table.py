"""The fleet table: one row per instance, grouped (`--group-by`) with a summary row per group, sorted as
in htop / k9s (`<` `>`, `i`, a column's letter); the `off` column marks an instance far off its group."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from tui.fleet.table_rows import GROUP_KEY_PREFIX, FleetRow, Instance, fleet_rows
from tui.format import UNKNOWN
from tui.sanitize import safe_line
from tui.telemetry.endpoint_row import EndpointRow, SortColumn
from tui.widgets.endpoint_table import (
    TREND,
    TREND_COLUMNS,
    Column,
    EndpointTable,
    figure_columns,
    status_cell,
)

WIDE_TABLE = 130  # from this width on, the model and a tok/s trend are shown too
OFF = Column(None, " off", 8)
# 80 columns less the scrollbar; a figure column is one wider than its longest text.
NARROW_COLUMNS: tuple[Column, ...] = (
    Column("status", "status", 12),
    Column("name", "instance", 16),
    # TTFT: "< 100 ms" and a space before it; running/waiting: a group's "1200/350" and a space
    *figure_columns(7, 9, 7, 5, 9, 5),
    OFF,
)
WIDE_COLUMNS: tuple[Column, ...] = (  # 130 cells
    Column("status", "status", 12),
    Column("name", "instance", 29),
    Column("model", "model", 25),
    *NARROW_COLUMNS[2:],
    TREND,
)
SORT_KEYS: dict[str, SortColumn] = {
    "S": "status",
    "N": "name",
    "M": "model",
    "T": "tokens_per_s",
    "F": "ttft_p95",
    "A": "acceptance",
    "L": "mean_length",
    "R": "running",
    "K": "kv",
}


def figure_cell(column: Column, row: EndpointRow) -> str:
    """A figure right-aligned after a space; one too long for its column is "…", never cut."""
    assert column.figure is not None
    text = column.figure(row)
    return (text if len(text) < column.width else "…").rjust(column.width)


@dataclass(frozen=True)
class FleetView:
    instances: Callable[[], list[Instance]]
    trend: Callable[[str, int], Sequence[float | None]]


class FleetTable(EndpointTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(key, f"sort_column('{column}')", show=False) for key, column in SORT_KEYS.items()
    ]
    narrow_columns = NARROW_COLUMNS
    wide_columns = WIDE_COLUMNS
    wide_from = WIDE_TABLE

    def __init__(self, view: FleetView, *, id: str | None = "fleet-table") -> None:
        super().__init__(id=id)
        self.view = view
        self.rows_shown: list[FleetRow] = []

    def cell(
        self, column: Column, row: EndpointRow, trend: Sequence[float | None], styles: dict[str, str]
    ) -> Text:
        """The endpoint table's cells (no alert badge on an instance: Prometheus has it); groups bold."""
        assert isinstance(row, FleetRow)
        if column is OFF:
            return Text(" " + row.off, style=f"bold {styles['warning']}" if row.off_far else "dim")
        if column.sort == "name":
            name = f"▾ {row.name}" if row.summary else f"  {row.name}"
            return Text(safe_line(name), style="bold" if row.summary else "")
        if not row.summary:
            if column.sort == "status":
                return status_cell(row, styles, badge=row.status != "no data")
            if column.figure is not None:
                return Text(figure_cell(column, row))
            if column.sort == "model" and not row.model:
                return Text(UNKNOWN, style="dim")  # not the backend ("llamacpp"): the model is unknown
            return super().cell(column, row, trend, styles)
        if column.figure is not None:
            return Text(figure_cell(column, row), style="bold")
        return Text(row.status if column.sort == "status" else "", style="bold")

    def row_key(self, row: EndpointRow) -> str:
        return row.key if isinstance(row, FleetRow) else row.name

    def text_widths(self, rows: Sequence[EndpointRow]) -> dict[SortColumn, int]:
        widths = super().text_widths(rows)
        widths["name"] += 2  # "▾ " before a group, "  " before an instance
        return widths

    # --- data ---------------------------------------------------------------------------------------------

    @property
    def endpoints(self) -> list[str]:
        """The instances shown, top to bottom (summary rows left out)."""
        return [row.key for row in self.rows_shown if not row.summary]

    @property
    def selected_endpoint(self) -> str | None:
        """The instance under the cursor; None on a group's summary row."""
        key = self._cursor_key()
        return None if key is None or key.startswith(GROUP_KEY_PREFIX) else key

    def set_rows(self, entries: Sequence[tuple[EndpointRow, Sequence[float | None]]]) -> None:
        """The fleet's table reads its view: any new data is a refresh."""
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Every instance's row from the board, as plain data, updated in place (`show_rows`)."""
        if not self.columns:
            return
        rows = fleet_rows(
            self.view.instances(),
            sort=self.sort_column,
            reverse=self.sort_reverse,
            filter_text=self.filter_text,
        )
        trends = {}
        if TREND in self.layout_columns:  # the narrow layout has no trend column
            trends = {row.key: self.view.trend(row.key, TREND_COLUMNS) for row in rows if not row.summary}
        self.show_rows(rows, trends)
        self.rows_shown = rows
