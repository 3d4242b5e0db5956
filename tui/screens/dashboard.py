"""The dashboard: one card per endpoint (stacked, or in a grid), or a table when they do not fit or on
`v` (in fleet mode the fleet's, with the advisor's line per group). What is hidden costs nothing: cards
are made when first shown, hidden views are brought up to date when shown, updates come in batches."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.content import Content
from textual.events import Key, Resize
from textual.widgets import DataTable, Header, Input, Static

from tui.screens.context import EndpointScreen, ScreenContext
from tui.telemetry.endpoint_row import EndpointRow, row_fields
from tui.widgets.card_view import CHART_LINES, CHART_MIN_WIDTH, CardData
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.endpoint_table import TREND_COLUMNS, EndpointTable
from tui.widgets.figure_table import wrap_whole
from tui.widgets.footer import BottomInput, Footer
from tui.widgets.gpu_panel import GpuStrip, card_gpu_line
from tui.widgets.messages import AutopilotUpdated, EndpointsUpdated, EndpointUpdated

if TYPE_CHECKING:  # fleet mode only: its modules are imported when it starts (not before a first frame)
    from tui.widgets.fleet_table import FleetTable

INTRO_BACK = "any key hides this; ? (help) and ctrl+p → Demo hints show it again"
CARD_MIN_WIDTH = 78  # a compact card's three lines
ROOMY_CARD_MIN_WIDTH = 60  # a roomy card's (sparklines shrink): two columns from 120 on
BATCH_DELAY_S = 0.25
AGE_TICK_S = 1.0  # ages are shown in whole seconds
ROOMY_CARD_ROWS = 9
COMPACT_CARD_ROWS = 5
CHART_CARD_ROWS = CHART_LINES + 2  # the least a card with the detail's charts takes (and its border)
CARD_CHROME_COLUMNS = 4  # a card's border and padding
CHROME_ROWS = 2  # header and footer
NO_ENDPOINTS = (
    "No endpoints. Give one with --endpoint URL or a spectop.toml.\n"
    "No server to watch yet? `spectop demo` runs simulated vLLM servers to try spectop on."
)


def card_layout(width: int, height: int, count: int, extra_rows: int = 0) -> tuple[int, bool] | None:
    """(columns, roomy) for `count` cards in `width` x `height`: roomy when all fit without scrolling,
    else compact; None when even those do not fit (the table shows them)."""
    room = height - CHROME_ROWS
    cards = max(1, count)
    for min_width, card_rows, roomy in (
        (ROOMY_CARD_MIN_WIDTH, ROOMY_CARD_ROWS, True),
        (CARD_MIN_WIDTH, COMPACT_CARD_ROWS, False),
    ):
        columns = max(1, min(cards, width // min_width))
        if -(-cards // columns) * (card_rows + extra_rows) <= room:
            return columns, roomy
    return None


def card_height(width: int, height: int, count: int, columns: int, roomy: bool, extra_rows: int = 0) -> int:
    """The rows of each card: all the room there is when every card gets the detail's charts, else the
    roomy or compact height (the card draws what its size holds)."""
    base = (ROOMY_CARD_ROWS if roomy else COMPACT_CARD_ROWS) + extra_rows
    share = (height - CHROME_ROWS) // -(-max(1, count) // columns)
    content_width = (width - (columns - 1)) // columns - CARD_CHROME_COLUMNS  # a gutter between columns
    if roomy and share >= CHART_CARD_ROWS + extra_rows and content_width >= CHART_MIN_WIDTH:
        return share
    return base


class DashboardScreen(EndpointScreen):
    DEFAULT_CSS = """
    DashboardScreen #intro { height: auto; padding: 0 1; background: $boost; color: $text; }
    DashboardScreen #group-advice { height: auto; padding: 0 1; }
    DashboardScreen #cards-scroll { height: 1fr; }
    DashboardScreen #cards { layout: grid; grid-size: 1; grid-gutter: 0 1; grid-rows: 5; height: auto; }
    DashboardScreen #empty { color: $text-muted; padding: 1 2; }
    DashboardScreen #table, DashboardScreen #fleet-table { display: none; }
    DashboardScreen.table-view #table, DashboardScreen.table-view #fleet-table { display: block; }
    DashboardScreen.table-view #cards-scroll { display: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_detail", "Open", key_display="⏎", tooltip="detail screen of the card"),
        Binding("slash", "filter", "Filter", key_display="/", tooltip="filter the cards by name"),
        Binding("e", "edit", "Edit", tooltip="edit the config file"),
        Binding("g", "gpus", "GPUs", show=False, tooltip="one row per GPU"),
        Binding("l", "log_viewer", "Log", show=False, tooltip="log, full screen"),
        Binding(
            "T", "tune", "Tune", show=False, tooltip="sweep k with restarts, recommend, apply (tune screen)"
        ),
        Binding(
            "v", "toggle_view", "View", show=False, tooltip="table view ⇄ cards (alone when cards do not fit)"
        ),
        Binding("escape", "clear_filter", "Clear filter", show=False, tooltip="clear the filter"),
        Binding("down", "move(1, 0)", "Next", show=False, tooltip="move between the cards"),
        Binding("up", "move(-1, 0)", "Previous", show=False, tooltip="move between the cards"),
        Binding("right", "move(0, 1)", "Right", show=False, tooltip="move between the cards"),
        Binding("left", "move(0, -1)", "Left", show=False, tooltip="move between the cards"),
    ]

    AUTO_FOCUS = None

    def __init__(self, context: ScreenContext, table: FleetTable | None = None) -> None:
        super().__init__(context)
        self._fleet = table  # fleet mode: the fleet's table instead of the endpoints' one
        self._names: list[str] = []  # every endpoint shown, in the order they came
        self._known: set[str] = set()
        self._cards: dict[str, EndpointCard] = {}  # their cards, made when the cards view first shows
        self._stale_cards: set[str] = set()  # cards whose endpoint changed while the table showed
        self._stale_seen: set[str] = set()  # endpoints stale at the last age tick
        self._added = False  # endpoints came since the last layout
        self._card_rows = COMPACT_CARD_ROWS
        self._mounting: object | None = None  # the cards being mounted (on_mount waits for them)
        self._columns = 1
        self._filter = ""
        self._focus_pending = False
        self._flush_pending = False
        self._dirty: set[str] = set()
        self._read: set[str] = set()  # endpoints whose first reading was drawn (it is drawn at once)
        self._chosen_view: str | None = None  # "cards" / "table" after `v`; None: by what fits
        self.view = "cards"
        self._gpu_rows = (0, False)  # the GPU strip's rows, and whether any card has a GPU line
        self._advice_rows = 0  # fleet mode: the group advice's lines above the table or the cards
        self._advice_text: Content | None = None  # and their text shown
        self._autopilot: dict[str, str] = {}  # each endpoint's autopilot line, while it is on (`o`)

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        intro = Static(self._intro_text(), id="intro", markup=False)
        intro.display = bool(self.context.intro)
        yield intro
        yield GpuStrip(id="gpu-strip")
        advice = Static("", id="group-advice", markup=False)
        advice.display = False
        yield advice
        with VerticalScroll(id="cards-scroll", can_focus=False):
            yield Static(NO_ENDPOINTS, id="empty")
            yield Container(id="cards")
        yield (
            self._fleet
            if self._fleet is not None
            else EndpointTable(
                id="table", choice=self.context.table_choice, on_chosen=self.context.remember_table
            )
        )
        yield BottomInput("filter endpoints by name (Enter keeps it, Escape clears)", id="card-filter")
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        self._names = [endpoint.name for endpoint in self.context.board.endpoints]
        self._known = set(self._names)
        self.query_one("#empty", Static).display = not self._names
        self._layout_for(self.size.width, self.size.height)  # the cards view makes the cards
        if self._mounting is not None:
            await self._mounting  # type: ignore[misc]  # an AwaitMount
            self._mounting = None
        if self._cards and self.view == "cards":
            next(iter(self._cards.values())).focus()
        self.set_interval(AGE_TICK_S, self._tick_ages)

    def _ensure_cards(self) -> None:
        """Every endpoint has its card; one that missed updates while hidden gets the latest data."""
        for name in self._stale_cards & self._cards.keys():
            self._cards[name].update_data(self._card_data(name))
        self._stale_cards = set()
        missing = [name for name in self._names if name not in self._cards]
        if not missing:
            return
        container = self.query_one("#cards", Container)
        roomy = container.has_class("roomy")
        for name in missing:
            card = self._cards[name] = EndpointCard(self._card_data(name), id=f"card-{len(self._cards)}")
            card.roomy = roomy
            card.styles.height = self._card_rows
            card.display = self._filter in name.lower()
        self._mounting = container.mount_all([self._cards[name] for name in missing])

    def _focus_first_card(self) -> None:
        self._focus_pending = False
        self._focus_view(keep=(self._view_widget(), Input))

    def _view_widget(self) -> type[EndpointTable | EndpointCard]:
        return EndpointTable if self.view == "table" else EndpointCard  # the fleet's table too

    def _focus_view(self, keep: tuple[type, ...] = ()) -> None:
        """The table in the table view, else the first card shown; unless a `keep` widget has the focus."""
        if isinstance(self.focused, keep):
            return
        if self.view == "table":
            self._table().focus()
        elif cards := self._visible_cards():
            cards[0].focus()

    @on(EndpointUpdated)
    @on(EndpointsUpdated)
    def _endpoints_updated(self, message: EndpointUpdated | EndpointsUpdated) -> None:
        """New figures, an alert, a new endpoint: one redraw `BATCH_DELAY_S` after the first covers a tick;
        a whole poll is drawn now."""
        names = (message.endpoint,) if isinstance(message, EndpointUpdated) else message.endpoints
        self._mark_dirty(names, message.immediate)

    def on_autopilot_updated(self, message: AutopilotUpdated) -> None:
        changed = (message.lines.keys() | self._autopilot.keys()) & self._known
        self._autopilot = message.lines
        self._mark_dirty(changed, immediate=False)

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        if self._autopilot:
            self._refresh_group_advice()

    def _card_data(self, name: str) -> CardData:
        return replace(self.context.card_data(name), autopilot=self._autopilot.get(name))

    def _mark_dirty(self, names: Iterable[str], immediate: bool) -> None:
        readings = self.context.board.readings
        for name in names:
            if name not in self._known:  # laid out with the next batch (one layout for a poll's new ones)
                self._names.append(name)
                self._known.add(name)
                self._added = True
                self.query_one("#empty", Static).display = False
            self._dirty.add(name)
            if name not in self._read and name in readings:
                # An endpoint's first figures are drawn now: batching is for the steady state.
                self._read.add(name)
                immediate = True
        if immediate:
            self._flush_dirty()
        elif not self._flush_pending:
            self._flush_pending = True
            self.set_timer(BATCH_DELAY_S, self._flush_dirty)

    def _flush_dirty(self) -> None:
        self._flush_pending = False
        dirty, self._dirty = self._dirty, set()
        if self._added:
            self._added = False
            self._layout_for(self.size.width, self.size.height)  # the cards view makes their cards
            if not self._focus_pending and not isinstance(self.focused, self._view_widget() | Input):
                self._focus_pending = True
                self.call_after_refresh(self._focus_first_card)
        self._update(dirty)
        self._refresh_gpu()
        self._refresh_group_advice()

    def _update(self, names: set[str] | list[str]) -> None:
        """New data for `names`, drawn by the view that shows (the other when it shows, `_show_view`)."""
        if names and self.view == "cards":
            for name in set(names) & self._cards.keys():
                self._cards[name].update_data(self._card_data(name))
        elif names:
            self._stale_cards.update(name for name in names if name in self._cards)
            self._set_rows(names)

    def _refresh_gpu(self) -> None:
        """The GPU strip at the top, and one more row per card when any card shows a GPU line."""
        board = self.context.board
        rows = self.query_one(GpuStrip).show(board.gpus, board.gpu_shared)
        gpu_line = any(
            card_gpu_line(view, board.gpu_shared, board.gpus, 80) is not None for view in board.gpus.values()
        )
        gpu_rows = (rows, gpu_line)
        if gpu_rows != self._gpu_rows:
            self._gpu_rows = gpu_rows
            self.query_one("#cards", Container).set_class(gpu_rows[1], "gpu")
            self._layout_for(self.size.width, self.size.height)

    def _refresh_group_advice(self, width: int | None = None) -> None:
        """Above the cards or the table, wrapped whole (the layout makes room): the fleet's group advice, and
        in the table view the autopilot's line for the row under the cursor (a card shows its own)."""
        room = max(20, (width or self.size.width) - 2)
        lines = list(self.context.group_advice_lines()) if self._fleet is not None else []
        name = self.endpoint_in_view if self.view == "table" else None
        if name is not None and name in self._autopilot:
            lines.append((f"{name}: {self._autopilot[name]}", True))
        parts = [
            Content.styled(part, "$warning" if better else "$text-muted")
            for line, better in lines
            for part in wrap_whole(line, room, "", "  ")
        ]
        text, rows = Content("\n").join(parts), len(parts)
        widget = self.query_one("#group-advice", Static)
        if text != self._advice_text:  # Static.update lays the screen out again: only for a new text
            self._advice_text = text
            widget.update(text)
        widget.display = rows > 0
        if rows != self._advice_rows:
            self._advice_rows = rows
            self._layout_for(self.size.width, self.size.height)

    def _tick_ages(self) -> None:
        """Once a second: late cards show their growing age; a table row only when it turns stale or back."""
        board = self.context.board
        if (now := self.context.clock.time()) is None:  # a replay before its first record: no age yet
            return
        stale_after = self.context.stale_after_s
        stale = {name for name, reading in board.readings.items() if now - reading.time > stale_after}
        turned, self._stale_seen = stale ^ self._stale_seen, stale
        if self.view == "table":
            self._update(turned)
            return
        late_after = board.settings.poll_interval_s + 1.0
        late = [
            name
            for name in self._names
            if (reading := board.readings.get(name)) is None or now - reading.time >= late_after
        ]
        self._update(late)

    def _intro_text(self) -> str:
        return f"{self.context.intro}\n{INTRO_BACK}" if self.context.intro else ""

    def on_key(self, _event: Key) -> None:
        """The intro (`spectop demo`) goes at the first key; the key does what it does anyway."""
        self._show_intro(False)

    def action_show_intro(self) -> None:  # the palette's "Demo hints"
        self._show_intro(True)

    def _show_intro(self, shown: bool) -> None:
        intro = self.query_one("#intro", Static)
        if intro.display != shown:
            intro.display = shown
            self._layout_for(self.size.width, self.size.height)  # its rows go to the cards, or back

    def on_screen_resume(self) -> None:
        if self._names:  # coming back from another screen (the editor may have changed a threshold)
            self.context.reread_thresholds()

    def on_resize(self, event: Resize) -> None:
        self._refresh_group_advice(event.size.width)
        self._layout_for(event.size.width, event.size.height)

    def _layout_for(self, width: int, height: int) -> None:
        if width <= 0 or height <= 0:
            return  # not laid out yet
        cards = self.query_one("#cards", Container)
        # Roomy cards when all fit (the demo's two in 80x24), a grid from 120 columns, else compact.
        strip_rows, gpu_line = self._gpu_rows  # the GPU strip at the top; a GPU line on the cards
        strip_rows += self._advice_rows
        intro = self.query_one("#intro", Static)
        if intro.display:  # `spectop demo`'s lines until the first key
            lines = self._intro_text().split("\n")
            strip_rows += sum(len(wrap_whole(line, max(1, width - 2), "", "")) or 1 for line in lines)
        count = len(self._names)
        fitting = card_layout(width, height - strip_rows, count, extra_rows=int(gpu_line))
        self._columns, roomy = fitting or (max(1, width // CARD_MIN_WIDTH), False)
        rows = card_height(width, height - strip_rows, count, self._columns, roomy, int(gpu_line))
        self._card_rows = rows
        cards.styles.grid_size_columns = self._columns
        cards.styles.grid_rows = (rows,)
        cards.set_class(roomy, "roomy")
        for card in self._cards.values():
            card.roomy = roomy
            card.styles.height = rows
        self._show_view(self._chosen_view or ("cards" if fitting else "table"))

    def _show_view(self, view: str) -> None:
        if view == "cards":
            self._ensure_cards()  # made, or brought up to date, before they show
        if view == self.view:
            return
        self.view = view
        self.set_class(view == "table", "table-view")
        table = self._table()
        if view == "table":
            focused = self.endpoint_in_view
            self._set_rows(self._names)
            if focused is not None and isinstance(table, EndpointTable):  # the cursor on the focused card
                table.select(focused)
            if not isinstance(self.focused, Input):
                table.focus()
        elif isinstance(self.focused, EndpointTable):  # the fleet's table too
            selected = self._cards.get(table.selected_endpoint or "")
            cards = self._visible_cards()
            target = selected if selected in cards else (cards[0] if cards else None)
            if target is not None:
                self.call_after_refresh(target.focus)  # a card made just now is mounted by then
        self._refresh_group_advice()

    @on(DataTable.RowSelected, "#table, #fleet-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # Enter on a table row: that endpoint's detail, as Enter on its card
        self.action_open_detail()

    def _table(self) -> EndpointTable | FleetTable:
        return self._fleet if self._fleet is not None else self.query_one(EndpointTable)

    def _set_rows(self, names: Iterable[str]) -> None:
        """New figures for the table (the fleet's reads the board itself, `refresh_rows`)."""
        if self._fleet is not None:
            self._fleet.refresh_rows()
        else:
            self._table().set_rows([_table_entry(self._card_data(name)) for name in names])

    def action_toggle_view(self) -> None:
        self._chosen_view = "cards" if self.view == "table" else "table"
        self._show_view(self._chosen_view)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("edit", "tune"):
            return self.context.editable
        if action == "show_intro":
            return bool(self.context.intro)
        return True

    def _visible_cards(self) -> list[EndpointCard]:
        return [card for card in self._cards.values() if card.display]

    @property
    def endpoint_in_view(self) -> str | None:
        """The endpoint of the focused card, or of the table's cursor row in the table view."""
        focused = self.focused
        if isinstance(focused, EndpointTable):  # the fleet's table too
            return focused.selected_endpoint
        return self._card_endpoint()

    def _focused_card(self) -> EndpointCard | None:
        focused = self.focused
        if isinstance(focused, EndpointTable):  # the table view (the fleet's too): its cursor row's card
            return self._cards.get(focused.selected_endpoint or "")
        if focused is None:  # a key pressed before the first card took the focus: the first card
            visible = self._visible_cards()
            return visible[0] if visible else None
        return focused if isinstance(focused, EndpointCard) else None

    def action_move(self, rows: int, columns: int) -> None:
        cards = self._visible_cards()
        if not cards:
            return
        current = self._focused_card()
        index = cards.index(current) if current in cards else 0
        target = index + rows * self._columns + columns
        cards[max(0, min(len(cards) - 1, target))].focus()

    def action_open_detail(self) -> None:
        from tui.screens.detail import DetailScreen

        if (name := self.endpoint_in_view) is not None:
            self.app.push_screen(DetailScreen(self.context, name))

    def _card_endpoint(self) -> str | None:
        card = self._focused_card()
        return card.endpoint if card is not None else None

    def action_gpus(self) -> None:
        from tui.screens.detail import GpuScreen

        self.app.push_screen(GpuScreen(self.context, self._card_endpoint()))

    def action_log_viewer(self) -> None:
        self._open(self.context.open_log, self._card_endpoint())

    def action_edit(self) -> None:
        self._open(self.context.open_editor, self.endpoint_in_view)

    def action_tune(self) -> None:
        self._open(self.context.open_tune, self.endpoint_in_view)

    def _open(self, opener: Callable[[str], None], name: str | None) -> None:
        if name is None:
            self.notify("select an endpoint first", severity="warning")
        else:
            opener(name)

    def action_filter(self) -> None:
        self.query_one("#card-filter", BottomInput).open()

    def action_clear_filter(self) -> None:
        self.query_one("#card-filter", BottomInput).close(clear=True)
        self._apply_filter("")
        self._focus_view(keep=(EndpointCard,) if self.view == "cards" else ())  # the card focused stays

    @on(Input.Changed, "#card-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._apply_filter(event.value)

    @on(Input.Submitted, "#card-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value:
            self.query_one("#card-filter", BottomInput).close()
        self._focus_view()

    def _apply_filter(self, text: str) -> None:
        self._filter = text.strip().lower()
        self._table().set_filter(self._filter)
        for name, card in self._cards.items():
            card.display = self._filter in name.lower()
        cards = self._visible_cards()
        if self.view == "table" or isinstance(self.focused, Input):
            return
        if cards and self._focused_card() not in cards:
            cards[0].focus()


def _table_entry(data: CardData) -> tuple[EndpointRow, list[float | None]]:
    row = EndpointRow(
        **row_fields(
            data.name,
            data.reading,
            status=data.status,
            backend=data.backend,
            model=data.model,
            alert_severities=[alert.severity for alert in data.alerts],
        )
    )
    return row, data.series("generation_tokens_per_s", TREND_COLUMNS)
