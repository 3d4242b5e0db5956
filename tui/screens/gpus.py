"""The GPUs, one row per GPU (`g`), as nvitop shows them, with their processes where NVML lists them."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.events import Resize
from textual.widgets import Header, Static

from tui.screens.context import EndpointScreen, ScreenContext
from tui.widgets.footer import Footer
from tui.widgets.gpu_rows import screen_lines
from tui.widgets.messages import EndpointsUpdated, EndpointUpdated


class GpuScreen(EndpointScreen):
    DEFAULT_CSS = """
    GpuScreen #gpu-rows { padding: 0 1; }
    GpuScreen #gpu-rows-text { width: 100%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", tooltip="back to the screen before"),
        Binding("g", "back", "Back", show=False, tooltip="back to the screen before"),
    ]

    def __init__(self, context: ScreenContext, endpoint: str | None = None) -> None:
        super().__init__(context)
        self.endpoint = endpoint  # the endpoint it was opened from: its GPUs first

    @property
    def endpoint_in_view(self) -> str | None:
        return self.endpoint

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

    def on_endpoint_updated(self, message: EndpointUpdated) -> None:
        if message.log_line is None:
            self._show()

    def on_endpoints_updated(self, message: EndpointsUpdated) -> None:
        self._show()

    def lines(self) -> list[Content]:
        board = self.context.board
        views = dict(board.gpus)
        if self.endpoint in views:  # the endpoint it was opened from first
            views = {self.endpoint: views[self.endpoint], **views}
        return screen_lines(views, board.gpu_shared, max(20, self.size.width - 4))

    def _show(self) -> None:
        self.query_one("#gpu-rows-text", Static).update(Content("\n").join(self.lines()))

    def action_back(self) -> None:
        self.app.pop_screen()
