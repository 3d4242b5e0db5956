"""The dashboard's table view: one row per endpoint, sortable like htop / k9s (`<` `>` pick the column,
`i` inverts), for when cards do not fit (many endpoints, a small terminal) or on `v`.

Built for hundreds of rows: a tick changes only the cells whose text changed (`update_cell`), and rows
are re-sorted only when their order changes. Row data is `tui.telemetry.endpoint_row.EndpointRow`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
        return self.sort or "trend"


NARROW_COLUMNS: tuple[Column, ...] = (
    Column("status", "status", 12),
    Column("name", "endpoint", 14),
    Column("tokens_per_s", "tok/s", 8, lambda row: fmt_tokens_per_s(row.tokens_per_s)),
    Column("ttft_p95", "TTFT95", 9, lambda row: fmt_latency(row.ttft_p95_s)),
    Column("acceptance", "accept", 9, lambda row: fmt_rate(row.acceptance_rate)),
    Column("mean_length", "len", 6, lambda row: fmt_length(row.mean_acceptance_length)),
    Column("running", "run/wt", 9, lambda row: f"{fmt_count(row.running)}/{fmt_count(row.waiting)}"),
    Column("kv", "KV", 7, lambda row: fmt_rate(row.kv_cache_usage)),
)
WIDE_COLUMNS: tuple[Column, ...] = (
    *NARROW_COLUMNS[:2],
    Column("model", "model", 26),
    *NARROW_COLUMNS[2:],
    Column(None, "  trend tok/s", TREND_COLUMNS + 2),
)
STATUS_STYLE = {"up": "success", "down": "error", "restarting": "warning", "stale": "warning", "waiting": ""}
Cells = tuple[Text, ...]


def row_cells(
    row: EndpointRow, trend: Sequence[float | None], styles: dict[str, str], columns: Sequence[Column]
) -> Cells:
    """The cells of one row, as the table shows them (unknown figures are "–")."""
    cells = []
    for column in columns:
        if column.figure is not None:
            cells.append(Text(column.figure(row).rjust(column.width)))
        elif column.sort == "status":
            cells.append(_status_cell(row, styles))
        elif column.sort == "name":
            cells.append(Text(safe_line(row.name), style="bold"))
        elif column.sort == "model":
            cells.append(
                Text(safe_line(row.model or row.backend or UNKNOWN), style="" if row.model else "dim")
            )
        else:
            line = spark(trend, TREND_COLUMNS, TOKENS_PER_S_FLOOR)[0]
            cells.append(Text("  " + line, style=styles.get("trend", "")))
    return tuple(cells)


def _status_cell(row: EndpointRow, styles: dict[str, str]) -> Text:
    """`● up`, and `CRIT` / `WARN` when an alert is active: words, never colour alone."""
    status = Text(f"● {row.status}", style=styles.get(STATUS_STYLE.get(row.status, ""), ""))
    if row.worst_alert is not None:
        badge_style = styles["critical" if row.worst_alert == "critical" else "warning"]
        status.append(" CRIT" if row.worst_alert == "critical" else " WARN", style=f"bold {badge_style}")
    return status


class EndpointTable(DataTable[Text]):
    DEFAULT_CSS = """
    EndpointTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("less_than_sign", "sort_by(-1)", "Sort ←", key_display="<"),
        Binding("greater_than_sign", "sort_by(1)", "Sort →", key_display=">"),
        Binding("i", "invert_sort", "Invert"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, id=id)
        self.sort_column: SortColumn = "status"
        self.sort_reverse = False
        self.filter_text = ""
        self._rows: dict[str, EndpointRow] = {}
        self._trends: dict[str, list[float | None]] = {}
        self._cells: dict[str, Cells] = {}  # what each shown row's cells say now
        self._order: list[str] = []
        self.wide = False

    @property
    def layout_columns(self) -> tuple[Column, ...]:
        return WIDE_COLUMNS if self.wide else NARROW_COLUMNS

    def on_mount(self) -> None:
        self._build_columns()

    def _build_columns(self) -> None:
        self.clear(columns=True)
        self._cells.clear()
        self._order = []
        for column in self.layout_columns:
            self.add_column(column.header, width=column.width, key=column.key)
        self._label_columns()

    def on_resize(self, event: Resize) -> None:
        wide = event.size.width >= WIDE_TABLE
        if wide != self.wide:
            selected = self.selected_endpoint
            self.wide = wide
            self._build_columns()
            self._sync(set(self._rows))
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
        self._sync({row.name for row, _ in entries})

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip().lower()
        self._sync(set(self._rows))

    def _shown(self, name: str) -> bool:
        return self.filter_text in name.lower()

    def _sync(self, names: set[str]) -> None:
        styles = self._styles()
        for name in names:
            row = self._rows[name]
            if not self._shown(name):
                if name in self._cells:
                    self.remove_row(name)
                    del self._cells[name]
                continue
            cells = row_cells(row, self._trends.get(name, []), styles, self.layout_columns)
            old = self._cells.get(name)
            if old is None:
                self.add_row(*cells, key=name)
            else:
                for column, before, after in zip(self.layout_columns, old, cells, strict=True):
                    if before != after:
                        self.update_cell(name, column.key, after)
            self._cells[name] = cells
        self._resort()

    def _resort(self) -> None:
        shown = [row for name, row in self._rows.items() if name in self._cells]
        order = [row.name for row in sorted_rows(shown, self.sort_column, reverse=self.sort_reverse)]
        if order == self._order and len(order) == self.row_count:
            return
        selected = self.selected_endpoint
        self._order = order
        rank = {safe_line(name): index for index, name in enumerate(order)}
        self.sort("name", key=lambda cell: rank.get(cell.plain, len(rank)))
        if selected is not None:
            self.select(selected)

    def select(self, name: str) -> None:
        """Put the cursor on `name`'s row (when it is shown)."""
        if name in self._cells:
            self.move_cursor(row=self.get_row_index(name), animate=False)

    @property
    def selected_endpoint(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:  # an empty or shrinking table has no cursor cell
            return None
        return str(key.value) if key.value is not None else None

    # --- sorting keys -------------------------------------------------------------------------------------

    def action_sort_by(self, step: int) -> None:
        index = SORT_COLUMNS.index(self.sort_column)
        self.sort_column = SORT_COLUMNS[(index + step) % len(SORT_COLUMNS)]
        self._label_columns()
        self._resort()

    def action_invert_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._label_columns()
        self._resort()

    def _label_columns(self) -> None:
        """The sort column's header says so: an arrow and reverse video (no colour needed)."""
        for column in self.layout_columns:
            if column.key not in self.columns:
                continue
            label = column.header
            if column.sort == self.sort_column:
                label += " ▼" if self.sort_reverse else " ▲"
            label = label.rjust(column.width) if column.figure is not None else label
            style = "bold reverse" if column.sort == self.sort_column else "bold"
            self.columns[column.key].label = Text(label, style=style)  # type: ignore[index]
        self._require_update_dimensions = True
        self.refresh()
