"""The dashboard: one card per endpoint, stacked on small terminals and in a grid on large ones."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.events import Resize
from textual.widgets import Footer, Header, Input, Static

from tui.messages import EndpointUpdated
from tui.screens.context import EndpointScreen, ScreenContext
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.gpu_panel import GpuStrip

CARD_MIN_WIDTH = 78
BATCH_DELAY_S = 0.25
AGE_TICK_S = 1.0  # ages are shown in whole seconds
ROOMY_CARD_ROWS = 8
CHROME_ROWS = 2  # header and footer


class DashboardScreen(EndpointScreen):
    DEFAULT_CSS = """
    DashboardScreen #cards-scroll { height: 1fr; }
    DashboardScreen #cards { layout: grid; grid-size: 1; grid-gutter: 0 1; grid-rows: 5; height: auto; }
    DashboardScreen #cards.roomy { grid-rows: 8; }
    DashboardScreen #cards.gpu { grid-rows: 6; }
    DashboardScreen #cards.roomy.gpu { grid-rows: 9; }
    DashboardScreen #empty { color: $text-muted; padding: 1 2; }
    DashboardScreen #card-filter { dock: bottom; display: none; }
    DashboardScreen #card-filter.visible { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_detail", "Open", key_display="⏎"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("e", "edit", "Edit"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("down", "move(1, 0)", "Next", show=False),
        Binding("up", "move(-1, 0)", "Previous", show=False),
        Binding("right", "move(0, 1)", "Right", show=False),
        Binding("left", "move(0, -1)", "Left", show=False),
    ]

    AUTO_FOCUS = None

    def __init__(self, context: ScreenContext) -> None:
        super().__init__(context)
        self._cards: dict[str, EndpointCard] = {}
        self._columns = 1
        self._filter = ""
        self._focus_pending = False
        self._flush_pending = False
        self._dirty: set[str] = set()
        self._gpu_rows = (0, False)  # the GPU strip's rows, and whether any card has a GPU line

    @property
    def endpoint_in_view(self) -> str | None:
        card = self._focused_card()
        return card.endpoint if card is not None else None

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield GpuStrip(id="gpu-strip")
        with VerticalScroll(id="cards-scroll", can_focus=False):
            yield Static("No endpoints. Give one with --endpoint URL or a spectop.toml.", id="empty")
            yield Container(id="cards")
        yield Input(
            placeholder="filter endpoints by name (Enter keeps it, Escape clears)",
            id="card-filter",
            disabled=True,
        )
        yield Footer(compact=True, show_command_palette=False)

    async def on_mount(self) -> None:
        cards = [self._new_card(endpoint.name) for endpoint in self.context.board.endpoints]
        if cards:
            await self.query_one("#cards", Container).mount_all(cards)
        self._layout_for(self.size.width, self.size.height)
        if cards:
            cards[0].focus()
        self.set_interval(AGE_TICK_S, self._tick_ages)

    def _new_card(self, name: str) -> EndpointCard:
        card = EndpointCard(self.context.card_data(name), id=f"card-{len(self._cards)}")
        self._cards[name] = card
        card.roomy = self.query_one("#cards", Container).has_class("roomy")
        self.query_one("#empty", Static).display = False
        return card

    def _add_card(self, name: str) -> EndpointCard:
        card = self._new_card(name)
        self.query_one("#cards", Container).mount(card)
        self._layout_for(self.size.width, self.size.height)
        if not self._focus_pending and not isinstance(self.focused, EndpointCard | Input):
            self._focus_pending = True
            self.call_after_refresh(self._focus_first_card)
        return card

    def _focus_first_card(self) -> None:
        self._focus_pending = False
        cards = self._visible_cards()
        if cards and not isinstance(self.focused, EndpointCard | Input):
            cards[0].focus()

    def on_endpoint_updated(self, message: EndpointUpdated) -> None:
        """New figures, an alert, a new endpoint: redraw soon, batched.

        Every endpoint is polled on the same tick, so their readings arrive within milliseconds of
        each other: one redraw `BATCH_DELAY_S` after the first covers them all (one frame per tick
        instead of one per endpoint).
        """
        if message.endpoint not in self._cards:
            self._add_card(message.endpoint)
        self._dirty.add(message.endpoint)
        if message.immediate:
            self._flush_dirty()
        elif not self._flush_pending:
            self._flush_pending = True
            self.set_timer(BATCH_DELAY_S, self._flush_dirty)

    def _flush_dirty(self) -> None:
        self._flush_pending = False
        dirty, self._dirty = self._dirty, set()
        for name in dirty:
            card = self._cards.get(name)
            if card is not None:
                card.update_data(self.context.card_data(name))
        self._refresh_gpu()

    def _refresh_gpu(self) -> None:
        """The GPU strip at the top, and one more row per card when any card shows a GPU line."""
        board = self.context.board
        rows = self.query_one(GpuStrip).show(board.gpus, board.gpu_shared)
        gpu_rows = (rows, any(card.has_class("gpu") for card in self._cards.values()))
        if gpu_rows != self._gpu_rows:
            self._gpu_rows = gpu_rows
            self.query_one("#cards", Container).set_class(gpu_rows[1], "gpu")
            self._layout_for(self.size.width, self.size.height)

    def _tick_ages(self) -> None:
        """Once a second: cards whose last scrape is late show their growing age (and turn stale)."""
        late_after = self.context.board.settings.poll_interval_s + 1.0
        for name, card in self._cards.items():
            data = self.context.card_data(name)
            if data.age is None or data.age >= late_after:
                card.update_data(data)

    def on_screen_resume(self) -> None:
        if self._cards:  # coming back from another screen (the editor may have changed a threshold)
            self.context.reread_thresholds()

    def on_resize(self, event: Resize) -> None:
        self._layout_for(event.size.width, event.size.height)

    def _layout_for(self, width: int, height: int) -> None:
        cards = self.query_one("#cards", Container)
        self._columns = max(1, width // CARD_MIN_WIDTH)
        cards.styles.grid_size_columns = self._columns
        # Roomy cards (full-width sparklines, every figure) whenever they all fit without
        # scrolling, e.g. the two endpoints of `spectop demo` in 80x24; compact otherwise.
        card_rows = -(-max(1, len(self._cards)) // self._columns)
        strip_rows, gpu_line = self._gpu_rows
        roomy = height - CHROME_ROWS - strip_rows >= card_rows * (ROOMY_CARD_ROWS + gpu_line)
        cards.set_class(roomy, "roomy")
        for card in self._cards.values():
            card.roomy = roomy

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit":
            return self.context.editable
        return True

    def _visible_cards(self) -> list[EndpointCard]:
        return [card for card in self._cards.values() if card.display]

    def _focused_card(self) -> EndpointCard | None:
        focused = self.focused
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
        card = self._focused_card()
        if card is None:
            return
        from tui.screens.detail import DetailScreen

        self.app.push_screen(DetailScreen(self.context, card.endpoint))

    def action_edit(self) -> None:
        card = self._focused_card()
        if card is None:
            self.notify("select an endpoint first", severity="warning")
            return
        self.context.open_editor(card.endpoint)

    def action_filter(self) -> None:
        box = self.query_one("#card-filter", Input)
        box.disabled = False
        box.add_class("visible")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#card-filter", Input)
        box.value = ""
        box.remove_class("visible")
        box.disabled = True
        self._apply_filter("")
        cards = self._visible_cards()
        if cards and self._focused_card() is None:
            cards[0].focus()

    @on(Input.Changed, "#card-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._apply_filter(event.value)

    @on(Input.Submitted, "#card-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value:
            event.input.remove_class("visible")
            event.input.disabled = True
        cards = self._visible_cards()
        if cards:
            cards[0].focus()

    def _apply_filter(self, text: str) -> None:
        self._filter = text.strip().lower()
        for name, card in self._cards.items():
            card.display = self._filter in name.lower()
        cards = self._visible_cards()
        if cards and self._focused_card() not in cards and not isinstance(self.focused, Input):
            cards[0].focus()
