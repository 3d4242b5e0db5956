"""The dashboard's table view: one row per endpoint, sortable like htop / k9s (`<` `>` pick the column,
`i` inverts), for when cards do not fit (many endpoints, a small terminal) or on `v`.

Built for hundreds of rows: a tick changes only the cells whose text changed (`update_cell`), and rows
are re-sorted only when their order changes. Row data is `tui.telemetry.endpoint_row.EndpointRow`.
The fleet's table (tui/widgets/fleet_table.py) extends this one: the same figure columns, cells,
sorting keys and cell-by-cell updates, with its own rows (grouped, a summary row per group).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.widgets import DataTable

from tui.format import UNKNOWN, fmt_count, fmt_latency, fmt_length, fmt_rate, fmt_tokens_per_s
from tui.sanitize import safe_line
from tui.telemetry.endpoint_row import SORT_COLUMNS, EndpointRow, SortColumn, sorted_rows
from tui.widgets.chart import TOKENS_PER_S_FLOOR, spark

TREND_COLUMNS = 12
WIDE_TABLE = 114  # from this width on, the model and a tok/s trend are shown too


@dataclass(frozen=True)
class Column:
    sort: SortColumn | None  # None: the column does not sort
    header: str
    width: int  # cells have no padding: text columns end in a space, figures are right-aligned
    figure: Callable[[EndpointRow], str] | None = None  # a right-aligned figure; None: text

    @property
    def key(self) -> str:
        return self.sort or self.header.strip()


# The figure columns, tok/s to KV, in this order: (sort column, header, the figure as text).
FIGURES: tuple[tuple[SortColumn, str, Callable[[EndpointRow], str]], ...] = (
    ("tokens_per_s", "tok/s", lambda row: fmt_tokens_per_s(row.tokens_per_s)),
    ("ttft_p95", "TTFT95", lambda row: fmt_latency(row.ttft_p95_s)),
    ("acceptance", "accept", lambda row: fmt_rate(row.acceptance_rate)),
    ("mean_length", "len", lambda row: fmt_length(row.mean_acceptance_length)),
    ("running", "run/wt", lambda row: f"{fmt_count(row.running)}/{fmt_count(row.waiting)}"),
    ("kv", "KV", lambda row: fmt_rate(row.kv_cache_usage)),
)
TREND = Column(None, "  trend tok/s", TREND_COLUMNS + 2)


def figure_columns(*widths: int) -> tuple[Column, ...]:
    """The figure columns (tok/s … KV) in these widths."""
    return tuple(
        Column(sort, header, width, figure)
        for (sort, header, figure), width in zip(FIGURES, widths, strict=True)
    )


NARROW_COLUMNS: tuple[Column, ...] = (
    Column("status", "status", 12),
    Column("name", "endpoint", 14),
    *figure_columns(8, 9, 9, 6, 9, 7),
)
WIDE_COLUMNS: tuple[Column, ...] = (
    *NARROW_COLUMNS[:2],
    Column("model", "model", 26),
    *NARROW_COLUMNS[2:],
    TREND,
)
STATUS_STYLE = {
    "up": "success",
    "down": "error",
    "restarting": "warning",
    "stale": "warning",
    "no data": "warning",  # fleet mode: Prometheus failed
    "waiting": "",
}
Cells = tuple[Text, ...]


def status_cell(row: EndpointRow, styles: dict[str, str], *, badge: bool = True) -> Text:
    """`● up`, and `CRIT` / `WARN` when an alert is active (with `badge`): words, never colour alone."""
    status = Text(f"● {row.status}", style=styles.get(STATUS_STYLE.get(row.status, ""), ""))
    if badge and row.worst_alert is not None:
        critical = row.worst_alert == "critical"
        badge_style = styles["critical" if critical else "warning"]
        status.append(" CRIT" if critical else " WARN", style=f"bold {badge_style}")
    return status


def trend_cell(trend: Sequence[float | None], styles: dict[str, str]) -> Text:
    return Text("  " + spark(trend, TREND_COLUMNS, TOKENS_PER_S_FLOOR)[0], style=styles.get("trend", ""))


class EndpointTable(DataTable[Text]):
    DEFAULT_CSS = """
    EndpointTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("less_than_sign", "sort_by(-1)", "Sort ←", key_display="<"),
        Binding("greater_than_sign", "sort_by(1)", "Sort →", key_display=">"),
        Binding("i", "invert_sort", "Invert"),
    ]
    narrow_columns: ClassVar[tuple[Column, ...]] = NARROW_COLUMNS
    wide_columns: ClassVar[tuple[Column, ...]] = WIDE_COLUMNS
    wide_from: ClassVar[int] = WIDE_TABLE

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, id=id)
        self.sort_column: SortColumn = "status"
        self.sort_reverse = False
        self.filter_text = ""
        self._rows: dict[str, EndpointRow] = {}
        self._trends: dict[str, list[float | None]] = {}
        self._cells: dict[str, Cells] = {}  # what each shown row's cells say now
        self._order: list[str] = []  # the shown rows' keys, top to bottom
        self.wide = False

    @property
    def layout_columns(self) -> tuple[Column, ...]:
        return self.wide_columns if self.wide else self.narrow_columns

    def on_mount(self) -> None:
        self._build_columns()

    def _build_columns(self) -> None:
        self.clear(columns=True)
        self._cells = {}
        self._order = []
        for column in self.layout_columns:
            self.add_column(column.header, width=column.width, key=column.key)
        self._label_columns()
        self.refresh_rows()

    def on_resize(self, event: Resize) -> None:
        wide = event.size.width >= self.wide_from
        if wide != self.wide:
            selected = self._cursor_key()
            self.wide = wide
            self._build_columns()
            if selected is not None:
                self.select(selected)

    def _styles(self) -> dict[str, str]:
        theme = self.app.current_theme
        return {
            "success": theme.success or "green",
            "error": f"bold {theme.error or 'red'}",
            "warning": theme.warning or "yellow",
            "critical": theme.error or "red",
            "trend": theme.primary or "",
        }

    # --- cells --------------------------------------------------------------------------------------------

    def cell(
        self, column: Column, row: EndpointRow, trend: Sequence[float | None], styles: dict[str, str]
    ) -> Text:
        """One cell as the table shows it (unknown figures are "–", never 0)."""
        if column.figure is not None:
            return Text(column.figure(row).rjust(column.width))
        if column.sort == "status":
            return status_cell(row, styles)
        if column.sort == "name":
            return Text(safe_line(row.name), style="bold")
        if column.sort == "model":
            return Text(safe_line(row.model or row.backend or UNKNOWN), style="" if row.model else "dim")
        return trend_cell(trend, styles)

    def row_key(self, row: EndpointRow) -> str:
        return row.name

    # --- data ---------------------------------------------------------------------------------------------

    @property
    def endpoints(self) -> list[str]:
        """The endpoints shown, top to bottom."""
        return list(self._order)

    def set_rows(self, entries: Sequence[tuple[EndpointRow, Sequence[float | None]]]) -> None:
        """New data for some or all endpoints; only changed cells are redrawn."""
        for row, trend in entries:
            self._rows[row.name] = row
            self._trends[row.name] = list(trend)
        self.refresh_rows()

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip().lower()
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Show the rows the filter lets through, sorted."""
        shown = [row for name, row in self._rows.items() if self.filter_text in name.lower()]
        self.show_rows(sorted_rows(shown, self.sort_column, reverse=self.sort_reverse), self._trends)

    def show_rows(self, rows: Sequence[EndpointRow], trends: Mapping[str, Sequence[float | None]]) -> None:
        """`rows` top to bottom are the table now: only the cells that changed are rewritten, rows come
        and go, and the table is re-sorted (the cursor staying on its row) only when the order changed."""
        if not self.columns:
            return
        styles = self._styles()
        columns = self.layout_columns
        cells = {
            self.row_key(row): tuple(
                self.cell(column, row, trends.get(self.row_key(row), ()), styles) for column in columns
            )
            for row in rows
        }
        cursor = self._cursor_key()
        for key in [key for key in self._cells if key not in cells]:
            self.remove_row(key)
        for key, after in cells.items():
            before = self._cells.get(key)
            if before is None:
                self.add_row(*after, key=key)
                continue
            for column, old, new in zip(columns, before, after, strict=True):
                if old != new:
                    self.update_cell(key, column.key, new)
        self._cells = cells
        order = list(cells)
        if order == self._order and len(order) == self.row_count:
            return
        self._order = order
        name = next(index for index, column in enumerate(columns) if column.sort == "name")
        rank = {cells[key][name].plain: index for index, key in enumerate(order)}
        self.sort("name", key=lambda text: rank.get(text.plain, len(rank)))
        if cursor is not None:
            self.select(cursor)

    def select(self, name: str) -> None:
        """Put the cursor on `name`'s row (when it is shown)."""
        if name in self._cells:
            self.move_cursor(row=self.get_row_index(name), animate=False)

    def _cursor_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:  # an empty or shrinking table has no cursor cell
            return None
        return str(key.value) if key.value is not None else None

    @property
    def selected_endpoint(self) -> str | None:
        return self._cursor_key()

    # --- sorting keys -------------------------------------------------------------------------------------

    def action_sort_by(self, step: int) -> None:
        index = SORT_COLUMNS.index(self.sort_column)
        self.sort_column = SORT_COLUMNS[(index + step) % len(SORT_COLUMNS)]
        self._sorted()

    def action_invert_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._sorted()

    def action_sort_column(self, column: SortColumn) -> None:
        """Sort by `column`; again: the other way round (the fleet table's letter keys)."""
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        self._sorted()

    def _sorted(self) -> None:
        self._label_columns()
        self.refresh_rows()

    def _label_columns(self) -> None:
        """The sort column's header says so: an arrow and reverse video (no colour needed); a figure's
        arrow in front of it, so that it fits the column."""
        for column in self.layout_columns:
            if column.key not in self.columns:
                continue
            sorted_by = column.sort == self.sort_column
            arrow = ("▼" if self.sort_reverse else "▲") if sorted_by else ""
            if column.figure is not None:
                label = (arrow + column.header).rjust(column.width)
            else:
                label = f"{column.header} {arrow}".rstrip()
            style = "bold reverse" if sorted_by else "bold"
            self.columns[column.key].label = Text(label, style=style)  # type: ignore[index]
        self._require_update_dimensions = True
        self.refresh()
