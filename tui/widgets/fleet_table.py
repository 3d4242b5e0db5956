"""The fleet table: one row per instance, grouped (`--group-by`) with a summary row per group, for when
the fleet's instances do not fit as cards (tui/fleet/table_rows.py has the rows as plain data).

Sorting as in htop / k9s: `<` `>` move the sort column, `i` inverts it, and a column's letter sorts by
it (again: inverted): S status, N name, M model, T tok/s, F TTFT p95, A acceptance, L mean length,
R running, K KV. The `off` column marks an instance far off its group (its acceptance or tokens/s,
e.g. `acc-35%`) and a group with such members (`2 off`). Enter on an instance opens its detail screen.

Kept apart from the dashboard's endpoint table (tui/widgets/endpoint_table.py) for now; the two share
their row fields and sort columns and can be merged. A refresh whose row order did not change only
rewrites the cells that changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.widgets import DataTable

from tui.fleet.table_rows import GROUP_KEY_PREFIX, SORT_COLUMNS, FleetRow, Instance, SortColumn, fleet_rows
from tui.format import UNKNOWN, fmt_count, fmt_latency, fmt_length, fmt_rate, fmt_tokens_per_s
from tui.sanitize import safe_line
from tui.screens.context import ScreenContext
from tui.widgets.chart import TOKENS_PER_S_FLOOR, spark

TREND_COLUMNS = 12
WIDE_TABLE = 130  # from this width on, the model and a tok/s trend are shown too


@dataclass(frozen=True)
class Column:
    sort: SortColumn | None  # None: the column does not sort
    header: str
    width: int
    figure: Callable[[FleetRow], str] | None = None  # a right-aligned figure; None: text

    @property
    def key(self) -> str:
        return self.sort or self.header.strip()


def _queue(row: FleetRow) -> str:
    return f"{fmt_count(row.running)}/{fmt_count(row.waiting)}"


NARROW_COLUMNS: tuple[Column, ...] = (  # 78 cells: 80 columns less the scrollbar
    Column("status", "status", 12),
    Column("name", "instance", 20),
    Column("tokens_per_s", "tok/s", 7, lambda row: fmt_tokens_per_s(row.tokens_per_s)),
    Column("ttft_p95", "TTFT95", 7, lambda row: fmt_latency(row.ttft_p95_s)),
    Column("acceptance", "accept", 7, lambda row: fmt_rate(row.acceptance_rate)),
    Column("mean_length", "len", 5, lambda row: fmt_length(row.mean_acceptance_length)),
    Column("running", "run/wt", 7, _queue),
    Column("kv", "KV", 5, lambda row: fmt_rate(row.kv_cache_usage)),
    Column(None, " off", 8),
)
WIDE_COLUMNS: tuple[Column, ...] = (
    Column("status", "status", 12),
    Column("name", "instance", 30),
    Column("model", "model", 28),
    *NARROW_COLUMNS[2:],
    Column(None, "  trend tok/s", TREND_COLUMNS + 2),
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
STATUS_STYLE = {"up": "success", "down": "error", "stale": "warning", "no data": "warning"}
Cells = tuple[Text, ...]


def row_cells(
    row: FleetRow, trend: Sequence[float | None], styles: dict[str, str], columns: Sequence[Column]
) -> Cells:
    """The cells of one row as the table shows them (unknown figures are "–", never 0)."""
    bold = "bold" if row.summary else ""
    cells = []
    for column in columns:
        if column.figure is not None:
            cells.append(Text(column.figure(row).rjust(column.width - 1) + " ", style=bold))
        elif column.sort == "status":
            cells.append(_status_cell(row, styles))
        elif column.sort == "name":
            name = f"▾ {row.name}" if row.summary else f"  {row.name}"
            cells.append(Text(safe_line(name), style="bold" if row.summary else ""))
        elif column.sort == "model":
            text = "" if row.summary else (row.model or row.backend or UNKNOWN)
            cells.append(Text(safe_line(text), style="" if row.model else "dim"))
        elif column.header == " off":
            cells.append(Text(" " + row.off, style=f"bold {styles['warning']}" if row.off_far else "dim"))
        else:
            line = "" if row.summary else spark(trend, TREND_COLUMNS, TOKENS_PER_S_FLOOR)[0]
            cells.append(Text("  " + line, style=styles.get("trend", "")))
    return tuple(cells)


def _status_cell(row: FleetRow, styles: dict[str, str]) -> Text:
    """`● up`, `● no data` (Prometheus failed), and CRIT / WARN for an active alert: words, not colour."""
    if row.summary:
        return Text(row.status, style="bold")
    status = Text(f"● {row.status}", style=styles.get(STATUS_STYLE.get(row.status, ""), ""))
    if row.worst_alert is not None and row.status != "no data":  # not one alert per instance then
        critical = row.worst_alert == "critical"
        status.append(
            " CRIT" if critical else " WARN", style=f"bold {styles['critical' if critical else 'warning']}"
        )
    return status


class FleetTable(DataTable[Text]):
    DEFAULT_CSS = """
    FleetTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("less_than_sign", "sort_by(-1)", "Sort ←", key_display="<"),
        Binding("greater_than_sign", "sort_by(1)", "Sort →", key_display=">"),
        Binding("i", "invert_sort", "Invert"),
        *(Binding(key, f"sort_column('{column}')", show=False) for key, column in SORT_KEYS.items()),
    ]

    def __init__(self, context: ScreenContext, *, id: str | None = "fleet-table") -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, id=id)
        self.context = context
        self.sort_column: SortColumn = "status"
        self.sort_reverse = False
        self.filter_text = ""
        self.wide = False
        self.rows_shown: list[FleetRow] = []
        self._cells: dict[str, Cells] = {}

    @property
    def layout_columns(self) -> tuple[Column, ...]:
        return WIDE_COLUMNS if self.wide else NARROW_COLUMNS

    def on_mount(self) -> None:
        self._build_columns()

    def on_resize(self, event: Resize) -> None:
        wide = event.size.width >= WIDE_TABLE
        if wide != self.wide:
            self.wide = wide
            self._build_columns()

    def _build_columns(self) -> None:
        self.clear(columns=True)
        self._cells = {}
        self.rows_shown = []
        for column in self.layout_columns:
            self.add_column(column.header, width=column.width, key=column.key)
        self._label_columns()
        self.refresh_rows()

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
        """The instances shown, top to bottom (summary rows left out)."""
        return [row.key for row in self.rows_shown if not row.summary]

    @property
    def selected_endpoint(self) -> str | None:
        """The instance under the cursor; None on a group's summary row."""
        if not self.row_count:
            return None
        try:
            key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:  # an empty or shrinking table has no cursor cell
            return None
        value = key.value
        return None if value is None or value.startswith(GROUP_KEY_PREFIX) else value

    def instances(self) -> list[Instance]:
        board = self.context.board
        result = []
        for endpoint in board.endpoints:
            data = self.context.card_data(endpoint.name)
            severities = tuple(alert.severity for alert in data.alerts)
            result.append(Instance(endpoint.name, data.reading, data.status, severities))
        return result

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip().lower()
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Rebuild the rows from the board; only changed cells are rewritten when the order holds."""
        if not self.columns:
            return
        rows = fleet_rows(
            self.instances(), sort=self.sort_column, reverse=self.sort_reverse, filter_text=self.filter_text
        )
        styles = self._styles()
        series = self.context.board.series
        columns = self.layout_columns
        cells = {
            row.key: row_cells(
                row,
                []
                if row.summary
                else series.endpoint(row.key).tail("generation_tokens_per_s", TREND_COLUMNS),
                styles,
                columns,
            )
            for row in rows
        }
        if [row.key for row in rows] == [row.key for row in self.rows_shown]:
            for key, after in cells.items():
                before = self._cells.get(key)
                for column, old, new in zip(columns, before or (), after, strict=False):
                    if old != new:
                        self.update_cell(key, column.key, new)
        else:
            selected = self.selected_endpoint
            cursor = self.cursor_row
            self.clear()
            for row in rows:
                self.add_row(*cells[row.key], key=row.key)
            keys = [row.key for row in rows]
            if selected in keys:
                self.move_cursor(row=keys.index(selected), animate=False)
            elif keys:
                self.move_cursor(row=min(cursor, len(keys) - 1), animate=False)
        self.rows_shown = rows
        self._cells = cells

    # --- sorting keys -------------------------------------------------------------------------------------

    def action_sort_by(self, step: int) -> None:
        index = SORT_COLUMNS.index(self.sort_column)
        self.sort_column = SORT_COLUMNS[(index + step) % len(SORT_COLUMNS)]
        self._sorted()

    def action_invert_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._sorted()

    def action_sort_column(self, column: SortColumn) -> None:
        """A column's key: sort by it; again: the other way round."""
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        self._sorted()

    def _sorted(self) -> None:
        self._label_columns()
        self.refresh_rows()

    def _label_columns(self) -> None:
        """The sort column's header says so: an arrow and reverse video (no colour needed)."""
        for column in self.layout_columns:
            if column.key not in self.columns:
                continue
            arrow = ("▼" if self.sort_reverse else "▲") if column.sort == self.sort_column else ""
            if column.figure is not None:  # right-aligned, the arrow in front (it fits the width)
                text = arrow + column.header
                label = (text + " ").rjust(column.width) if len(text) < column.width else text
            else:
                label = f"{column.header} {arrow}".rstrip()
            style = "bold reverse" if column.sort == self.sort_column else "bold"
            self.columns[column.key].label = Text(label, style=style)  # type: ignore[index]
        self._require_update_dimensions = True
        self.refresh()
