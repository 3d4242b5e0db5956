"""The dashboard's table view, sortable like htop / k9s. Built for a thousand rows: rows are updated in
place, only the cells on the screen whose text changed are rewritten, and rows are re-sorted only when
their order changes. The fleet's table extends it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.events import Resize
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from tui.fit_text import cut_left, fit_words
from tui.format import UNKNOWN, fmt_count, fmt_length, fmt_quantile, fmt_rate, fmt_tokens_per_s, marked
from tui.sanitize import safe_line
from tui.state import TableChoice
from tui.telemetry.endpoint_row import SORT_COLUMNS, EndpointRow, SortColumn, sorted_rows
from tui.widgets.card_view import short_model
from tui.widgets.chart import TOKENS_PER_S_FLOOR, spark

TREND_COLUMNS = 12
KEPT_CELLS = 4000  # rendered cells kept (a 200x50 screen of the wide fleet table has about 650)
SegmentLines = list[list[Segment]]
WIDE_TABLE = 114  # from this width on, the model and a tok/s trend are shown too
_NEWLINE = Text("\n")


@dataclass(frozen=True)
class Column:
    sort: SortColumn | None  # None: the column does not sort
    header: str
    width: int  # cells have no padding: text columns end in a space, figures are right-aligned
    # (a text column of `FITTED` is at least this wide: more while the room allows)
    figure: Callable[[EndpointRow], str] | None = None  # a right-aligned figure; None: text

    @property
    def key(self) -> str:
        return self.sort or self.header.strip()


def _lifetime_marked(field: str, fmt: Callable[[float | None], str]) -> Callable[[EndpointRow], str]:
    """A row's figure `field` as text, marked when it is a lifetime figure (since the server started)."""
    return lambda row: marked(fmt(getattr(row, field)), field in row.lifetime)


# The figure columns, tok/s to KV, in this order: (sort column, header, the figure as text).
FIGURES: tuple[tuple[SortColumn, str, Callable[[EndpointRow], str]], ...] = (
    ("tokens_per_s", "tok/s", lambda row: fmt_tokens_per_s(row.tokens_per_s)),
    (
        "ttft_p95",
        "TTFT95",
        lambda row: marked(fmt_quantile(row.ttft_p95_s, row.ttft_p95_bounds), "ttft_p95_s" in row.lifetime),
    ),
    ("acceptance", "accept", _lifetime_marked("acceptance_rate", fmt_rate)),
    ("mean_length", "len", _lifetime_marked("mean_acceptance_length", fmt_length)),
    ("running", "run/wt", lambda row: f"{fmt_count(row.running)}/{fmt_count(row.waiting)}"),
    ("kv", "KV", lambda row: fmt_rate(row.kv_cache_usage)),
)
TREND = Column(None, "  trend tok/s", TREND_COLUMNS + 2)
# The text columns that grow to their widest cell while the room allows, in this order.
FITTED: tuple[SortColumn, ...] = ("name", "status", "model")


def figure_columns(*widths: int) -> tuple[Column, ...]:
    return tuple(
        Column(sort, header, width, figure)
        for (sort, header, figure), width in zip(FIGURES, widths, strict=True)
    )


NARROW_COLUMNS: tuple[Column, ...] = (
    Column("status", "status", 12),
    Column("name", "endpoint", 14),
    *figure_columns(8, 10, 9, 6, 9, 7),  # TTFT95: "< 100 ms" and the lifetime mark
)
WIDE_COLUMNS: tuple[Column, ...] = (
    *NARROW_COLUMNS[:2],
    Column("model", "model", 26),
    *NARROW_COLUMNS[2:],
    TREND,
)
# "no data": fleet mode, Prometheus failed
STATUS_STYLE = {"up": "success", "down": "error"} | dict.fromkeys(
    ("restarting", "stale", "no data"), "warning"
)
Cells = tuple[Text, ...]
Signature = tuple[str, str, tuple[object, ...]]


def signature(cell: Text) -> Signature:
    """What a cell shows: its text, its style and its spans (a Text's `==` leaves its style out)."""
    return (cell.plain, str(cell.style), tuple(cell.spans))


def status_cell(row: EndpointRow, styles: dict[str, str], *, badge: bool = True) -> Text:
    """`● up`, and `CRIT` / `WARN` when an alert is active (with `badge`): words, never colour alone."""
    status = Text(f"● {row.status}", style=styles.get(STATUS_STYLE.get(row.status, ""), ""))
    if badge and row.worst_alert is not None:
        critical = row.worst_alert == "critical"
        badge_style = styles["critical" if critical else "warning"]
        status.append(" CRIT" if critical else " WARN", style=f"bold {badge_style}")
    return status


def single_line_cell(
    console: Console, text: Text, width: int, padding: int, pre_style: Style, post_style: Style
) -> SegmentLines | None:
    """The one line of segments of `text` in a cell, made directly as DataTable's general Rich path makes it
    (equal in tests/ui/test_endpoint_table.py), far cheaper; None leaves a cell that is not one fitting line
    to DataTable."""
    plain = text.plain
    inner = width - 2 * padding
    if (
        inner < 0
        or "\n" in plain
        or "\t" in plain
        or text.justify not in (None, "default")
        or text.end not in ("\n", "")
        or cell_len(plain) > inner
    ):
        return None
    # Text.__rich_console__ joins its lines with "\n": the text's own style becomes a span of the line.
    content = list(_NEWLINE.join([text]).render(console, end=""))
    fill, pad = Segment(" " * (inner - cell_len(plain))), Segment(" " * padding)
    line = [
        Segment(segment.text, (pre_style + segment.style if segment.style else pre_style) + post_style)
        for segment in (pad, *content, fill, pad)
        if segment.text
    ]
    return [line]


class EndpointTable(DataTable[Text]):
    DEFAULT_CSS = """
    EndpointTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("less_than_sign", "sort_by(-1)", "Sort ←", key_display="<"),
        Binding("greater_than_sign", "sort_by(1)", "Sort →", key_display=">"),
        Binding("i", "invert_sort", "Invert"),
        Binding("c", "choose_columns", "Columns", tooltip="choose and order the columns (remembered)"),
    ]
    narrow_columns: ClassVar[tuple[Column, ...]] = NARROW_COLUMNS
    wide_columns: ClassVar[tuple[Column, ...]] = WIDE_COLUMNS
    wide_from: ClassVar[int] = WIDE_TABLE

    def __init__(
        self,
        *,
        id: str | None = None,
        choice: TableChoice | None = None,
        on_chosen: Callable[[TableChoice], None] | None = None,
    ) -> None:
        """`choice`: the columns and sort the user chose before (state.json); `on_chosen` keeps a new one."""
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, id=id)
        self.sort_column: SortColumn = "status"
        self.sort_reverse = False
        self.chosen: tuple[str, ...] = ()  # column keys in order; empty: every column of the layout
        self.on_chosen = on_chosen
        if choice is not None:
            known = {column.key for column in self.wide_columns}
            self.chosen = tuple(key for key in choice.columns if key in known)
            if choice.sort in SORT_COLUMNS:
                self.sort_column, self.sort_reverse = choice.sort, choice.reverse
        self.filter_text = ""
        self._rows: dict[str, EndpointRow] = {}
        self._trends: dict[str, list[float | None]] = {}
        self._cells: dict[str, tuple[Signature, ...]] = {}  # what each shown row's cells say now
        self._order: list[str] = []  # the shown rows' keys, top to bottom
        self._latest: dict[str, tuple[EndpointRow, Sequence[float | None]]] = {}  # each row's newest data
        self._stale: set[str] = set()  # rows whose newest data is not drawn yet (off the screen)
        self._drawn_styles: dict[str, str] | None = None  # the theme's styles the cells were made with
        self._kept_cells: LRUCache[tuple[object, ...], SegmentLines] = LRUCache(KEPT_CELLS)
        self._widths: dict[str, int] = {}  # the `FITTED` columns' widths now, by key
        self._rooms: dict[str, int] = {}  # and the cells they have room for (less a gap before text)
        self.wide = False

    @property
    def available_columns(self) -> tuple[Column, ...]:
        return self.wide_columns if self.wide else self.narrow_columns

    @property
    def layout_columns(self) -> tuple[Column, ...]:
        """The columns shown: the user's choice (in its order) of the available ones; the name always."""
        available = self.available_columns
        if not self.chosen:
            return available
        by_key = {column.key: column for column in available}
        shown = [by_key[key] for key in self.chosen if key in by_key]
        if not any(column.sort == "name" for column in shown):  # rows are found by their name cell
            shown.insert(0, next(column for column in available if column.sort == "name"))
        return tuple(shown)

    @property
    def visible_sorts(self) -> list[SortColumn]:
        """The sort columns shown, left to right: `<` `>` move among these only."""
        return [column.sort for column in self.layout_columns if column.sort is not None]

    def on_mount(self) -> None:
        self._keep_sort_visible()
        self._build_columns()

    def _keep_sort_visible(self) -> None:
        visible = self.visible_sorts
        if visible and self.sort_column not in visible:
            self.sort_column, self.sort_reverse = visible[0], False

    def set_columns(self, keys: Sequence[str]) -> None:
        """Show these columns in this order (unknown keys dropped) and keep the choice."""
        known = {column.key for column in self.wide_columns}
        self.chosen = tuple(key for key in keys if key in known)
        self._keep_sort_visible()
        self._build_columns()
        self._remember()

    def _remember(self) -> None:
        if self.on_chosen is not None:
            self.on_chosen(
                TableChoice(columns=list(self.chosen), sort=self.sort_column, reverse=self.sort_reverse)
            )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose_columns":
            return self.on_chosen is not None  # the dashboard's table (the fleet's keeps its columns)
        return super().check_action(action, parameters)

    def action_choose_columns(self) -> None:
        from tui.widgets.column_chooser import ColumnChooser

        shown = [column.key for column in self.layout_columns]
        every = [(column.key, column.header.strip()) for column in self.wide_columns]
        narrow = {column.key for column in self.narrow_columns}
        notes = {key: f"from {self.wide_from} columns" for key, _ in every if key not in narrow}

        def chosen(keys: list[str] | None) -> None:
            if keys is not None:
                self.set_columns(keys)

        self.app.push_screen(ColumnChooser(every, shown, notes), chosen)

    def _build_columns(self) -> None:
        """The layout's columns and the rows again, the cursor kept on its row."""
        selected = self._cursor_key()
        self._add_columns()
        self.refresh_rows()
        if selected is not None:
            self.select(selected)

    def _add_columns(self) -> None:
        self.clear(columns=True)
        self._cells, self._order, self._latest, self._stale = {}, [], {}, set()
        for column in self.layout_columns:
            width = self._widths.get(column.key, column.width)
            self.add_column(Text(column.header), width=width, key=column.key)  # labelled below
        self._label_columns()

    def on_resize(self, event: Resize) -> None:
        wide = event.size.width >= self.wide_from
        if wide != self.wide:
            self.wide = wide
            self._keep_sort_visible()
            self._build_columns()
        else:
            self.refresh_rows()  # the text columns fitted to the new width
        self._draw_visible()  # a taller table shows more rows

    def _fitted_widths(self, rows: Sequence[EndpointRow]) -> dict[str, int]:
        """The `FITTED` columns' widths for `rows`: each its widest cell, in order, while the room allows."""
        layout = self.layout_columns
        gaps = {
            column.key: int(following.figure is None)
            for column, following in zip(layout, [*layout[1:], TREND], strict=True)
            if column.sort in FITTED
        }
        scrolls = len(rows) + 1 >= self.size.height  # the header and the rows
        spare = self.size.width - (self.styles.scrollbar_size_vertical if scrolls else 0)
        spare -= sum(column.width for column in layout)
        texts = self.text_widths(rows) if rows else {}
        widths = {}
        for sort in FITTED:
            if (column := next((column for column in layout if column.sort == sort), None)) is None:
                continue
            gap = gaps[column.key]
            grow = max(0, min(texts.get(sort, 0) + gap - column.width, spare))
            widths[column.key] = column.width + grow
            self._rooms[column.key] = widths[column.key] - gap
            spare -= grow
        return widths

    def text_widths(self, rows: Sequence[EndpointRow]) -> dict[SortColumn, int]:
        """The widest text of each `FITTED` column, from the rows' strings alone (no cells made)."""
        return {
            "name": max(len(row.name) for row in rows),
            "status": max(len(row.status) + (7 if row.worst_alert else 2) for row in rows),  # "● up CRIT"
            "model": max(len(row.model or row.backend or UNKNOWN) for row in rows),
        }

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._stale and round(old_value) != round(new_value):
            self._draw_visible()  # rows scrolled into view get their newest data

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        """DataTable's cell rendering, kept per cell until what it shows changes (DataTable drops every
        rendered cell whenever any one changes)."""
        row_key = self._row_locations.get_key(row_index) if row_index >= 0 else None
        column_key = self._column_locations.get_key(column_index) if column_index >= 0 else None
        if row_key is None or column_key is None:  # the header, row labels: as DataTable does
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self._data.get(row_key, {}).get(column_key)
        key = (
            row_key,
            column_key,
            signature(value) if isinstance(value, Text) else value,
            row_index,  # the segments carry it (mouse meta)
            base_style,
            width,
            cursor,
            hover,
            self._show_hover_cursor,
            self.show_cursor,
            self.cursor_type,
            self._pseudo_class_state,
            self.app.theme,
        )
        kept = self._kept_cells.get(key)
        if kept is not None:
            return kept
        lines = None
        if isinstance(value, Text) and self.rows[row_key].height == 1:
            lines = self._single_line_cell(value, row_index, column_index, base_style, width, cursor, hover)
        if lines is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._kept_cells[key] = lines
        return lines

    def _single_line_cell(
        self,
        value: Text,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool,
        hover: bool,
    ) -> SegmentLines | None:
        """A one-line cell's segments made directly (`single_line_cell`); None: DataTable renders it."""
        fixed = row_index < self.fixed_rows or column_index < self.fixed_columns
        css = (self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
        component_style, post_style = self._get_styles_to_render_cell(
            False, False, fixed, hover, cursor, self.show_cursor, self._show_hover_cursor, *css
        )
        pre_style = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component_style
        return single_line_cell(self.app.console, value, width, self.cell_padding, pre_style, post_style)

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
        return Text("  " + spark(trend, TREND_COLUMNS, TOKENS_PER_S_FLOOR)[0], style=styles.get("trend", ""))

    def row_key(self, row: EndpointRow) -> str:
        return row.name

    # --- data ---------------------------------------------------------------------------------------------

    @property
    def endpoints(self) -> list[str]:
        return list(self._order)

    def set_rows(self, entries: Sequence[tuple[EndpointRow, Sequence[float | None]]]) -> None:
        for row, trend in entries:
            self._rows[row.name] = row
            self._trends[row.name] = list(trend)
        self.refresh_rows()

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip().lower()
        self.refresh_rows()

    def refresh_rows(self) -> None:
        shown = [row for name, row in self._rows.items() if self.filter_text in name.lower()]
        self.show_rows(sorted_rows(shown, self.sort_column, reverse=self.sort_reverse), self._trends)

    def show_rows(self, rows: Sequence[EndpointRow], trends: Mapping[str, Sequence[float | None]]) -> None:
        """`rows` top to bottom are the table now, updated in place: changed rows on the screen are redrawn
        cell by cell, the others when they scroll into view; re-sorted only when the order changed."""
        if not self.columns:
            return
        styles = self._styles()
        columns = self.layout_columns
        cursor = self._cursor_key()
        widths = self._fitted_widths(rows)
        if widths != self._widths:  # every row drawn again in the new widths
            self._widths = widths
            self._add_columns()
        if styles != self._drawn_styles:  # another theme: every row is drawn again
            self._drawn_styles = styles
            self._stale.update(self._cells)
        latest = {self.row_key(row): (row, trends.get(self.row_key(row), ())) for row in rows}
        for key in [key for key in self._cells if key not in latest]:
            self.remove_row(key)
            del self._cells[key]
        for key, entry in latest.items():
            if key not in self._cells:  # a new row: drawn at once
                cells = self._cells_of(entry, columns, styles)
                self._cells[key] = tuple(signature(cell) for cell in cells)
                self.add_row(*cells, key=key)
            elif self._latest.get(key) != entry:
                self._stale.add(key)
        self._latest = latest
        self._stale.intersection_update(latest)
        order = list(latest)
        if order != self._order or len(order) != self.row_count:
            self._order = order
            # by the name cells themselves: two names cut to fit may read the same
            rank = {id(self.get_cell(key, "name")): index for index, key in enumerate(order)}
            self.sort("name", key=lambda text: rank.get(id(text), len(rank)))
            if cursor is not None:
                self.select(cursor)
        self._draw_visible()

    def _cells_of(
        self,
        entry: tuple[EndpointRow, Sequence[float | None]],
        columns: Sequence[Column],
        styles: dict[str, str],
    ) -> Cells:
        row, trend = entry
        return tuple(self._fitted(column, self.cell(column, row, trend, styles)) for column in columns)

    def _fitted(self, column: Column, cell: Text) -> Text:
        """A `FITTED` cell in its room: a name keeps its end (the port), a model its last parts."""
        room = self._rooms.get(column.key)
        if room is None or cell.cell_len <= room:
            return cell
        if column.sort == "status":
            text = fit_words(cell.plain, room)
            fitted = cell[: len(text) - 1]  # its badge's style kept
            fitted.append(text[-1:])
            return fitted
        if column.sort == "model":
            return Text(short_model(cell.plain, room), style=cell.style)
        return Text(cut_left(cell.plain.lstrip(" "), room), style=cell.style)

    def visible_keys(self) -> list[str]:
        """The rows on the screen now, top to bottom (the terminal's height bounds the table's)."""
        if not self._order:
            return []
        top = max(0, int(self.scroll_y))
        height = max(self.size.height, self.app.size.height if self.is_attached else 0)
        return self._order[top : top + height + 1]

    def _draw_visible(self) -> None:
        """Draw the rows on the screen whose newest data is not drawn yet: only changed cells rewritten."""
        if not self._stale or not self.columns:
            return
        columns = self.layout_columns
        styles = self._styles()
        for key in self.visible_keys():
            if key not in self._stale:
                continue
            self._stale.discard(key)
            before = self._cells[key]
            after = self._cells_of(self._latest[key], columns, styles)
            self._cells[key] = tuple(signature(cell) for cell in after)
            for column, old, new, cell in zip(columns, before, self._cells[key], after, strict=True):
                if old != new:
                    self.update_cell(key, column.key, cell)

    def select(self, name: str) -> None:
        if name in self._cells:  # shown
            self.move_cursor(row=self.get_row_index(name), animate=False)

    def _cursor_key(self) -> str | None:
        try:
            key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except CellDoesNotExist:  # an empty or shrinking table has no cursor cell
            return None
        return str(key.value) if key.value is not None else None

    @property
    def selected_endpoint(self) -> str | None:
        return self._cursor_key()

    # --- sorting keys -------------------------------------------------------------------------------------

    def action_sort_by(self, step: int) -> None:
        visible = self.visible_sorts or list(SORT_COLUMNS)
        index = visible.index(self.sort_column) if self.sort_column in visible else -step
        self.sort_column = visible[(index + step) % len(visible)]
        self._sorted()

    def action_invert_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._sorted()

    def action_sort_column(self, column: SortColumn) -> None:
        """Sort by `column`, again: the other way round; a hidden column does not sort."""
        if column not in self.visible_sorts:
            self.app.bell()
            return
        self.sort_column, self.sort_reverse = column, column == self.sort_column and not self.sort_reverse
        self._sorted()

    def _sorted(self) -> None:
        self._label_columns()
        self.refresh_rows()
        self._remember()

    def _label_columns(self) -> None:
        """The sort column's header has an arrow and reverse video (no colour needed)."""
        for column in self.layout_columns:
            if column.key not in self.columns:
                continue
            sorted_by = column.sort == self.sort_column
            arrow = ("▼" if self.sort_reverse else "▲") if sorted_by else ""
            figure = column.figure is not None
            label = (
                (arrow + column.header).rjust(column.width) if figure else f"{column.header} {arrow}".rstrip()
            )
            style = "bold reverse" if sorted_by else "bold"
            self.columns[column.key].label = Text(label, style=style)  # type: ignore[index]
        self._require_update_dimensions = True
        self.refresh()
