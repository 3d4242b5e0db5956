"""Charts and sparklines of one series: the scale they are drawn on, and the detail screen's block chart.

The scale (`scale_for`) is what keeps a picture honest:
- a span floor, so noise does not fill the height: the axis spans at least `floor` (in the series'
  unit) and at least `RELATIVE_FLOOR` of the largest value; 0.2 ms of TTFT noise around 6.5 ms is a
  ripple, not a cliff;
- zero at the bottom: a flat 0.0 (an idle endpoint) is drawn at the floor of the chart, never at
  mid-height, and a series that is never negative is never drawn against a negative axis;
- not from zero either: TTFT at 40 ± 5 ms is drawn on 35..45 ms, not as a solid block from 0.
The range it used is printed next to the picture (`Scale.text`) so the height means something.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from textual.content import Content
from textual.widget import Widget

from tui.widgets.format import UNKNOWN, bucketed, chart_rows, sparkline

RELATIVE_FLOOR = 0.2  # the axis spans at least a fifth of the largest value
DEFAULT_FLOOR = 1.0  # an all-zero series with no floor of its own: [0, 1]
TOKENS_PER_S_FLOOR = 1.0  # tok/s: an idle endpoint is 0 on a 0..1 axis
SECONDS_FLOOR = 0.001  # latencies: at least 1 ms from bottom to top
RANGE_COLUMNS = 16  # " 5.85ms–7.15ms" after a card's sparkline


@dataclass(frozen=True)
class Scale:
    """The value at the bottom and at the top of a chart."""

    low: float
    high: float

    def text(self, formatter: Callable[[float | None], str]) -> str:
        return f"{formatter(self.low)}–{formatter(self.high)}"


def scale_for(
    values: Sequence[float | None], floor: float = 0.0, low: float | None = None, high: float | None = None
) -> Scale | None:
    """The axis for `values` (None when none is known); `low`/`high` fix either end (acceptance: 0, 1)."""
    known = [value for value in values if value is not None and math.isfinite(value)]
    if not known:
        return None
    smallest, largest = min(known), max(known)
    bottom = low if low is not None else smallest
    top = high if high is not None else largest
    if low is not None and high is not None:
        return Scale(bottom, top)
    span = max(floor, RELATIVE_FLOOR * max(abs(smallest), abs(largest))) or DEFAULT_FLOOR
    if top - bottom >= span:
        return Scale(bottom, top)
    if low is not None:
        return Scale(bottom, bottom + span)
    if high is not None:
        return Scale(top - span, top)
    middle = (bottom + top) / 2
    bottom, top = middle - span / 2, middle + span / 2
    if bottom < 0 <= smallest:  # never below zero for a series that is never negative
        bottom, top = 0.0, span
    return Scale(bottom, top)


def spark(
    values: Sequence[float | None],
    width: int,
    floor: float = 0.0,
    low: float | None = None,
    high: float | None = None,
) -> tuple[str, Scale | None]:
    """The last `width` values as a sparkline on `scale_for` of them, and that scale."""
    tail = list(values)[-width:] if width > 0 else []
    scale = scale_for(tail, floor, low, high)
    if scale is None:
        return " " * max(0, width), None
    return sparkline(tail, width, low=scale.low, high=scale.high), scale


def spark_with_range(
    values: Sequence[float | None],
    width: int,
    formatter: Callable[[float | None], str],
    style: str,
    floor: float = 0.0,
    low: float | None = None,
    high: float | None = None,
) -> tuple[tuple[str, str], tuple[str, str]]:
    """A card's sparkline and, after it, the range it is drawn on (`RANGE_COLUMNS` wide, muted)."""
    line, scale = spark(values, width, floor, low, high)
    label = f" {scale.text(formatter)}" if scale is not None else ""
    return (line, style), (label[:RANGE_COLUMNS].ljust(RANGE_COLUMNS), "$text-muted")


class Chart(Widget):
    DEFAULT_CSS = """
    Chart { height: 3; }
    """

    def __init__(
        self,
        label: str,
        formatter: Callable[[float | None], str],
        style: str,
        *,
        id: str | None = None,
        floor: float = 0.0,
        low: float | None = None,
        high: float | None = None,
    ) -> None:
        super().__init__(id=id)
        self.label = label
        self.formatter = formatter
        self.style = style
        self.floor, self.low, self.high = floor, low, high
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
        current = next((value for value in reversed(self.values) if value is not None), None)
        scale = scale_for(tail, self.floor, self.low, self.high)
        title = Content.assemble(
            (self.label, "bold"),
            "  ",
            (self.formatter(current), "bold" if current is not None else "$text-muted"),
            (f"  ({scale.text(self.formatter)})" if scale is not None else "", "$text-muted"),  # the axis
        )
        if scale is None:
            rows = [" " * width for _ in range(height)]
            rows[-1] = f"{UNKNOWN} no data in this window".ljust(width)[:width]
        else:
            rows = chart_rows(tail, width, height, low=scale.low, high=scale.high)
        lines = [title.truncate(width)] + [Content.styled(row, self.style) for row in rows]
        return Content("\n").join(lines)
