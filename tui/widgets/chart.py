"""A block chart of one series over the selected window, with its current value in the title."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.widget import Widget

from tui.widgets.format import UNKNOWN, bucketed, chart_rows


class Chart(Widget):
    DEFAULT_CSS = """
    Chart { height: 3; }
    """

    def __init__(
        self, label: str, formatter: Callable[[float | None], str], style: str, *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.label = label
        self.formatter = formatter
        self.style = style
        self.times: list[float] = []
        self.values: list[float | None] = []
        self.start = 0.0
        self.end = 0.0

    def set_values(self, times: list[float], values: list[float | None], start: float, end: float) -> None:
        """Samples at `times`, drawn over the window [start, end] (one column per slice of it)."""
        self.times, self.values, self.start, self.end = times, values, start, end
        self.refresh()

    def render(self) -> Content:
        width = max(1, self.content_size.width)
        height = max(1, self.content_size.height - 1)
        tail = bucketed(self.times, self.values, self.start, self.end, width)
        known = [value for value in self.values if value is not None]
        current = next((value for value in reversed(self.values) if value is not None), None)
        title = Content.assemble(
            (self.label, "bold"),
            "  ",
            (self.formatter(current), "bold" if current is not None else "$text-muted"),
            (
                f"  ({self.formatter(min(known))} – {self.formatter(max(known))})" if known else "",
                "$text-muted",
            ),
        )
        rows = chart_rows(tail, width, height, low=0.0)
        if not known:
            rows = [" " * width for _ in range(height)]
            rows[-1] = f"{UNKNOWN} no data in this window".ljust(width)[:width]
        lines = [title.truncate(width)] + [Content.styled(row, self.style) for row in rows]
        return Content("\n").join(lines)
