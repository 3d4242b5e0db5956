"""A block chart of one series over the selected window, with its current value in the title."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.widget import Widget

from tui.widgets.format import UNKNOWN, chart_rows


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
        self.values: list[float | None] = []

    def set_values(self, values: list[float | None]) -> None:
        self.values = values
        self.refresh()

    def render(self) -> Content:
        width = max(1, self.content_size.width)
        height = max(1, self.content_size.height - 1)
        tail = self.values[-width:]
        known = [value for value in tail if value is not None]
        current = tail[-1] if tail else None
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
