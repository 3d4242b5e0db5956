"""One endpoint in depth: charts over 1 / 5 / 30 minutes, every figure, and its log; and the GPUs, one row per
GPU (`g`), as nvitop shows them, with their processes where NVML lists them."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.events import Resize
from textual.widgets import Header, Input, Static

from tui.fit_text import fit_items, subtitle_room
from tui.format import UNKNOWN, fmt_setting
from tui.sanitize import safe_line
from tui.screens.context import EndpointScreen, ScreenContext, back_bindings
from tui.widgets.chart import ACCEPTANCE_CHART, TOKENS_CHART, TTFT_CHART, Chart, ChartSpec, TimeAxis
from tui.widgets.figure_table import FigureTable
from tui.widgets.footer import BottomInput, Footer
from tui.widgets.gpu_panel import GpuCharts, GpuRowsPane, screen_lines
from tui.widgets.log_pane import LogPane
from tui.widgets.messages import EndpointsUpdated, EndpointUpdated

WINDOWS_S: dict[str, float] = {"1": 60.0, "2": 300.0, "3": 1800.0}
WINDOW_LABELS = {60.0: "1 min", 300.0: "5 min", 1800.0: "30 min"}
ROOMY_MIN_HEIGHT = 34
CHARTS: dict[str, ChartSpec] = {  # chart id -> what it shows (the key is also its history series)
    "chart-tps": TOKENS_CHART,
    "chart-ttft": TTFT_CHART,
    "chart-acceptance": ACCEPTANCE_CHART,
}
MARKER_LEGEND = "R restart · C config change"


class DetailScreen(EndpointScreen):
    DEFAULT_CSS = """
    DetailScreen #top { height: 11; }
    DetailScreen.roomy #top { height: 22; }
    DetailScreen #charts { width: 1fr; padding: 0 1 0 1; }
    DetailScreen #charts-title { height: 1; color: $text-muted; }
    DetailScreen Chart { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", tooltip="back (or clear the filter)"),
        Binding("f", "toggle_follow", "Follow", tooltip="follow the log / hold it"),
        Binding("slash", "filter", "Filter", key_display="/", tooltip="filter the log"),
        Binding("e", "edit", "Edit", show=False, tooltip="edit the config file"),
        Binding("g", "gpus", "GPUs", show=False, tooltip="one row per GPU"),
        Binding("G", "toggle_gpu_rows", "GPU rows", show=False, tooltip="GPU charts ⇄ rows here"),
        Binding("l", "log_viewer", "Log", tooltip="log, full screen"),
        Binding("1", "window('1')", "1m", show=False, tooltip="charts over 1 min"),
        Binding("2", "window('2')", "5m", show=False, tooltip="charts over 5 min"),
        Binding("3", "window('3')", "30m", show=False, tooltip="charts over 30 min"),
        Binding("w", "next_window", "Window", show=False, tooltip="next chart window"),
    ]

    AUTO_FOCUS = None
    shows_log_lines: ClassVar[bool] = True

    def __init__(self, context: ScreenContext, endpoint: str) -> None:
        super().__init__(context, endpoint)
        self.endpoint: str = endpoint
        self.window_s = 300.0
        self.gpu_rows = False  # the GPU section: charts over the window, or one row per GPU (`G`)

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        with Horizontal(id="top"):
            yield FigureTable(self.context.card_data(self.endpoint), id="figures")
            with Vertical(id="charts"):
                yield Static(id="charts-title")
                for chart_id, spec in CHARTS.items():
                    yield Chart(spec, id=chart_id)
                yield TimeAxis(id="time-axis")
        yield GpuCharts(id="gpu-charts")
        yield GpuRowsPane(id="gpu-rows")
        yield LogPane(id="log")
        yield BottomInput("show only log lines containing… (Escape clears)", id="log-filter")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.set_class(self.size.height >= ROOMY_MIN_HEIGHT, "roomy")
        log = self.query_one(LogPane)
        endpoint = self.context.board.endpoint(self.endpoint)
        if endpoint is not None and endpoint.log_file is not None:
            log.border_title = safe_line(f"log {endpoint.log_file}")
        elif self.context.board.settings.prometheus is not None:
            log.border_title = "no logs in fleet mode: Prometheus gives metrics only"
        elif not self.context.editable:
            log.border_title = "log events from the recording"
        else:
            log.border_title = "no log_file for this endpoint"
        log.set_follow(True)
        log.show(self.context.board.log_entries(self.endpoint))
        self._refresh_figures()
        log.focus()
        self.set_interval(1.0, self._refresh_figures)  # ages, and the chart window moving on

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.height >= ROOMY_MIN_HEIGHT, "roomy")
        self._refresh_figures()  # the title fitted to the width, GPU rows drawn for it

    def on_endpoint_updated(self, message: EndpointUpdated) -> None:
        if message.endpoint != self.endpoint:
            return
        if message.log_line is not None:
            self.query_one(LogPane).add(message.log_line)
        else:
            self._refresh_figures()

    def on_endpoints_updated(self, message: EndpointsUpdated) -> None:
        if self.endpoint in message.endpoints:
            self._refresh_figures()

    def _refresh_figures(self) -> None:
        data = self.context.card_data(self.endpoint)
        parts = [*data.title().split(" · "), data.status_short(), data.caveat() or ""]
        room = subtitle_room(self.size.width, self.title or self.app.title)
        self.sub_title = " · ".join(fit_items([part for part in parts if part], room))  # whole parts only
        self.query_one(FigureTable).set_data(data)
        history = self.context.board.series.endpoint(self.endpoint)
        end = data.now if data.now is not None else (history.times[-1] if history.times else 0.0)
        start = end - self.window_s
        markers = [marker for marker in getattr(history, "markers", ()) if start <= marker[0] <= end]
        for chart_id, spec in CHARTS.items():
            times, values = history.window(spec.key, start)
            text = data.text(spec.key)
            value = (text, "$text-muted" if text == UNKNOWN else "bold")
            bound = history.bound_since(spec.key, start)
            chart = self.query_one(f"#{chart_id}", Chart)
            chart.set_values(times, values, start, end, markers, value=value, bound=bound)
        self.query_one(TimeAxis).set_window(start, end, markers)
        self._refresh_gpu(start, end)
        label = WINDOW_LABELS.get(self.window_s, f"{fmt_setting(self.window_s)}s")
        legend = f" · {MARKER_LEGEND}" if markers else ""
        self.query_one("#charts-title", Static).update(f"last {label} · keys 1 2 3 w{legend}")

    def _refresh_gpu(self, start: float, end: float) -> None:
        """The GPU section: charts over the window, or (`G`) one row per GPU as it is now."""
        board = self.context.board
        view = board.gpus.get(self.endpoint)
        charts, rows = self.query_one(GpuCharts), self.query_one(GpuRowsPane)
        rows.set_class(self.gpu_rows, "visible")
        if self.gpu_rows:
            charts.display = False
            rows.show(view, max(20, self.size.width - 4), self._no_gpu_poll())
        else:
            charts.show(view, board.gpu_history, start, end)

    def _no_gpu_poll(self) -> str:
        """Why there are no GPU rows when no GPU poll has answered."""
        if self.context.editable:
            return "no GPU data yet (the first GPU poll has not answered)"
        if self.context.board.settings.prometheus is not None:
            return "no GPU data in fleet mode (Prometheus gives the servers' metrics only)"
        return "no GPU data in a replay (GPU readings are not recorded)"

    def action_toggle_gpu_rows(self) -> None:
        self.gpu_rows = not self.gpu_rows
        self._refresh_figures()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.context.editable if action == "edit" else True

    def action_back(self) -> None:
        if self.query_one("#log-filter", BottomInput).is_open:
            self._close_filter(clear=True)
        else:
            self.app.pop_screen()

    def action_toggle_follow(self) -> None:
        log = self.query_one(LogPane)
        log.set_follow(not log.follow)

    def action_window(self, key: str) -> None:
        self.window_s = WINDOWS_S[key]
        self._refresh_figures()

    def action_next_window(self) -> None:
        windows = list(WINDOWS_S.values())
        index = windows.index(self.window_s) if self.window_s in windows else 0
        self.window_s = windows[(index + 1) % len(windows)]
        self._refresh_figures()

    def action_edit(self) -> None:
        self.context.open_editor(self.endpoint)

    def action_gpus(self) -> None:
        self.app.push_screen(GpuScreen(self.context, self.endpoint))

    def action_log_viewer(self) -> None:
        self.context.open_log(self.endpoint)

    def action_filter(self) -> None:
        self.query_one("#log-filter", BottomInput).open()

    def action_open_detail(self) -> None:
        """Already here (the command palette offers it everywhere)."""

    @on(Input.Changed, "#log-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        log = self.query_one(LogPane)
        log.filter_text = event.value.strip().lower()
        log.show(self.context.board.log_entries(self.endpoint))
        log.border_subtitle = f"filter: {event.value.strip()}" if event.value.strip() else None

    @on(Input.Submitted, "#log-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._close_filter(clear=not event.value.strip())

    def _close_filter(self, *, clear: bool) -> None:
        self.query_one("#log-filter", BottomInput).close(clear=clear)
        self.query_one(LogPane).focus()


class GpuScreen(EndpointScreen):
    DEFAULT_CSS = """
    GpuScreen #gpu-rows { padding: 0 1; }
    GpuScreen #gpu-rows-text { width: 100%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = back_bindings("g")

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        with VerticalScroll(id="gpu-rows"):
            yield Static(id="gpu-rows-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = "GPUs, one row each"
        self._show()
        self.query_one("#gpu-rows", VerticalScroll).focus()

    def on_resize(self, event: Resize) -> None:
        self._show()

    @on(EndpointUpdated)
    @on(EndpointsUpdated)
    def _endpoints_updated(self, message: EndpointUpdated | EndpointsUpdated) -> None:
        if not isinstance(message, EndpointUpdated) or message.log_line is None:  # a log line: no GPU news
            self._show()

    def lines(self) -> list[Content]:
        board = self.context.board
        views = dict(board.gpus)
        if self.endpoint in views:  # the endpoint it was opened from first
            views = {self.endpoint: views[self.endpoint], **views}
        return screen_lines(views, board.gpu_shared, max(20, self.size.width - 4))

    def _show(self) -> None:
        self.query_one("#gpu-rows-text", Static).update(Content("\n").join(self.lines()))
