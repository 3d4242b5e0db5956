"""Charts and sparklines of one series. `scale_for` keeps a picture honest: a span floor (noise is a
ripple, not a cliff), zero at the bottom for a series never negative, and the range printed beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from textual.content import Content
from textual.widget import Widget

from tui.format import BAR_CHARS, FIGURES, UNKNOWN, fmt_bound, fmt_duration, known

RELATIVE_FLOOR = 0.2  # the axis spans at least a fifth of the largest value
DEFAULT_FLOOR = 1.0  # an all-zero series with no floor of its own: [0, 1]
TOKENS_PER_S_FLOOR = 1.0  # tok/s: an idle endpoint is 0 on a 0..1 axis
SECONDS_FLOOR = 0.001  # latencies: at least 1 ms from bottom to top
GUTTER = 8  # the detail charts' y labels ("45 ms" top and bottom), right-aligned, and a space
SPARK_CHARS = "▁▂▃▄▅▆▇█"
MARKER_LETTERS = {"restart": "R", "config": "C"}


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
    return sparkline(tail, width, scale.low, scale.high), scale


Marker = tuple[float, str]  # (time, kind): kind is "restart" or "config" (a save & restart from the editor)


# --- drawing (pure text) --------------------------------------------------------------------------------


def sparkline(values: Sequence[float | None], width: int, low: float, high: float) -> str:
    """The last `width` values as block characters on `low`..`high`; unknown values are blanks."""
    if width <= 0:
        return ""
    span = high - low

    def char(value: float | None) -> str:
        if not known(value):
            return " "
        if span <= 0:
            return SPARK_CHARS[len(SPARK_CHARS) // 2]
        return SPARK_CHARS[round(min(1.0, max(0.0, (value - low) / span)) * (len(SPARK_CHARS) - 1))]

    return "".join(char(value) for value in list(values)[-width:]).rjust(width)


def _column(time: float, start: float, end: float, columns: int) -> int:
    return min(columns - 1, int((time - start) / ((end - start) / columns)))


def bucketed(
    times: Sequence[float], values: Sequence[float | None], start: float, end: float, columns: int
) -> list[float | None]:
    """`columns` means over equal slices of [start, end]: None for a slice with no known value, the slice
    before repeated for one with no sample at all."""
    if columns <= 0 or end <= start:
        return []
    slices: list[list[float] | None] = [None] * columns  # the known values of each sampled slice
    for time, value in zip(times, values, strict=False):
        if start <= time <= end:
            column = _column(time, start, end, columns)
            bucket = slices[column] = slices[column] or []
            if known(value):
                bucket.append(value)
    result: list[float | None] = []
    previous: float | None = None
    for sampled in slices:
        if sampled is not None:
            previous = sum(sampled) / len(sampled) if sampled else None
        result.append(previous)
    return result


def marker_columns(markers: Sequence[Marker], start: float, end: float, columns: int) -> dict[int, str]:
    """column -> kind of the markers inside [start, end] (a restart wins over a config change)."""
    if columns <= 0 or end <= start:
        return {}
    result: dict[int, str] = {}
    for time, kind in markers:
        if start <= time <= end:
            column = _column(time, start, end, columns)
            if result.get(column) != "restart":
                result[column] = kind
    return result


def chart_rows(values: Sequence[float | None], width: int, height: int, low: float, high: float) -> list[str]:
    """A block chart `height` rows tall (top row first) of the last `width` values (axis `low`..`high`)."""
    if width <= 0 or height <= 0:
        return []
    tail = list(values)[-width:]
    rows = [[" "] * len(tail) for _ in range(height)]
    span = high - low
    for column, value in enumerate(tail):
        if not known(value):
            continue
        level = 0.5 if span <= 0 else (value - low) / span
        eighths = max(1, round(min(1.0, max(0.0, level)) * height * 8))
        for row in range(height):
            filled = eighths - (height - 1 - row) * 8
            if filled >= 8:
                rows[row][column] = "█"
            elif filled > 0:
                rows[row][column] = BAR_CHARS[filled]
    return ["".join(row).rjust(width) for row in rows]


def _with_markers(row: str, columns: dict[int, str], style: str) -> Content:
    """A chart row with the marker columns drawn over it: a line in the blanks, the bars in warning colour."""
    parts: list[tuple[str, str]] = []
    for column, char in enumerate(row):
        if column in columns:
            parts.append(("│" if char == " " else char, "$warning"))
        elif parts and parts[-1][1] == style:
            parts[-1] = (parts[-1][0] + char, style)
        else:
            parts.append((char, style))
    return Content.assemble(*parts)


def _gutter(text: str) -> tuple[str, str]:
    return (text[: GUTTER - 1].rjust(GUTTER - 1) + " ", "$text-muted")


@dataclass(frozen=True)
class ChartSpec:
    """What a detail chart shows: a figure `key` in its style and scale, in the vocabulary's words."""

    key: str
    style: str
    floor: float = 0.0
    low: float | None = None
    high: float | None = None
    # A chart of something that is not a figure of the vocabulary (the GPU charts): its label and text.
    title: str | None = None
    text: Callable[[float | None], str] | None = None

    @property
    def label(self) -> str:
        return self.title if self.title is not None else FIGURES[self.key].label

    def formatter(self, value: float | None) -> str:
        return self.text(value) if self.text is not None else FIGURES[self.key].format(value)


# The three charts of the detail screen, and of a card that has the room (tui/widgets/card_view.py).
TOKENS_CHART = ChartSpec("generation_tokens_per_s", "$primary", floor=TOKENS_PER_S_FLOOR)
TTFT_CHART = ChartSpec("ttft_p50_s", "$secondary", floor=SECONDS_FLOOR)
ACCEPTANCE_CHART = ChartSpec("acceptance_rate", "$accent", low=0.0, high=1.0)
FIGURE_CHARTS = (TOKENS_CHART, TTFT_CHART, ACCEPTANCE_CHART)


def chart_lines(
    spec: ChartSpec,
    times: Sequence[float],
    values: Sequence[float | None],
    start: float,
    end: float,
    width: int,
    height: int,
    markers: Sequence[Marker] = (),
    value: tuple[str, str] | None = None,
    bound: tuple[float, float | None] | None = None,
) -> list[Content]:
    """A detail chart: a title (label, `value` or the newest value), then the rows with their y range.
    `bound`: some samples were a bucket bound, left as gaps and said, never plotted as measured."""
    rows_count = max(1, height - 1)
    columns = max(1, width - GUTTER)
    tail = bucketed(times, values, start, end, columns)
    current = next((value for value in reversed(values) if known(value)), None)
    scale = scale_for(tail, spec.floor, spec.low, spec.high)
    in_title = scale is not None and rows_count == 1
    title = Content.assemble(
        (spec.label, "bold"),
        "  ",
        value or (spec.formatter(current), "bold" if current is not None else "$text-muted"),
        (f"  ({scale.text(spec.formatter)})" if in_title and scale is not None else "", "$text-muted"),
    )
    gaps = f"{bound_text(bound)}: a bucket bound, not plotted" if bound is not None else None
    if bound is not None and gaps is not None and scale is not None:
        for said in (f"  gaps: {gaps}", f"  gaps: {bound_text(bound)} not plotted", "  gaps: bounds"):
            if title.cell_length + len(said) <= width:  # whole or not at all
                title = Content.assemble(title, (said, "$text-muted"))
                break
    if scale is None:
        rows = [" " * columns for _ in range(rows_count)]
        rows[-1] = f"{UNKNOWN} {gaps or 'no data in this window'}".ljust(columns)[:columns]
    else:
        rows = chart_rows(tail, columns, rows_count, scale.low, scale.high)
    labels = [""] * rows_count
    if scale is not None and rows_count >= 2:
        labels[0], labels[-1] = spec.formatter(scale.high), spec.formatter(scale.low)
    marked = marker_columns(markers, start, end, columns)
    lines = [title.truncate(width)]
    for label, row in zip(labels, rows, strict=True):
        lines.append(Content.assemble(_gutter(label), _with_markers(row, marked, spec.style)).truncate(width))
    return lines


def bound_text(bound: tuple[float, float | None]) -> str:
    """ "< 100 ms" (the first bucket) or "> 10 s" (beyond the last)."""
    lower, upper = bound
    return f"> {fmt_bound(lower)}" if upper is None or math.isinf(upper) else f"< {fmt_bound(upper)}"


TICK_STEPS_S = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)
TICK_SPACING = 9  # columns between two ticks, at least


def _ago(seconds: float) -> str:
    return f"-{fmt_duration(seconds)}"


def _reads_exactly(seconds: float) -> bool:
    """Whether `fmt_duration` says `seconds` without rounding it down ("-4 min" for 270 s would not)."""
    whole = int(seconds)
    return whole == seconds and (whole < 60 or (whole < 86400 and whole % 60 == 0) or whole % 86400 == 0)


def _tick_step(span: float, columns: int) -> int | None:
    """The smallest tick step TICK_SPACING apart whose labels read exactly (never "-4 min  -4 min")."""
    for step in TICK_STEPS_S:
        if step / span * columns < TICK_SPACING:
            continue
        if all(_reads_exactly(ago) for ago in range(step, int(span) + 1, step) if ago < span):
            return step
    return None


def time_axis(start: float, end: float, width: int, markers: Sequence[Marker] = ()) -> Content:
    """ "-5 min  -4 min … now" under the charts, with the markers' letters; ticks never overlap them."""
    columns = max(1, width - GUTTER)
    cells: list[tuple[str, str] | None] = [None] * columns
    for column, kind in marker_columns(markers, start, end, columns).items():
        cells[column] = (MARKER_LETTERS.get(kind, "?"), "$warning bold")

    def place(column: int, text: str) -> bool:
        if column < 0 or column + len(text) > columns:
            return False
        lo, hi = max(0, column - 1), min(columns, column + len(text) + 1)
        if any(cell is not None for cell in cells[lo:hi]):
            return False
        for offset, char in enumerate(text):
            cells[column + offset] = (char, "$text-muted")
        return True

    span = end - start
    if span > 0:
        any(place(columns - 3 - shift, "now") for shift in range(4))  # left of a marker at the end
        place(0, _ago(span))
        step = _tick_step(span, columns)
        if step is not None:
            ago = float(step)
            while ago < span:
                label = _ago(ago)
                # the label starts at its time's column, or ends there when it would not fit
                column = _column(end - ago, start, end, columns)
                place(column if column + len(label) <= columns - 4 else column - len(label) + 1, label)
                ago += step
    parts = [(" " * GUTTER, ""), *(cell or (" ", "") for cell in cells)]
    return Content.assemble(*parts).truncate(width)


# --- widgets --------------------------------------------------------------------------------------------


class Chart(Widget):
    DEFAULT_CSS = "Chart { height: 3; }"

    def __init__(self, spec: ChartSpec, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spec = spec
        self.set_values([], [], 0.0, 0.0)

    def set_values(
        self,
        times: list[float],
        values: list[float | None],
        start: float,
        end: float,
        markers: Sequence[Marker] = (),
        *,
        value: tuple[str, str] | None = None,
        bound: tuple[float, float | None] | None = None,
    ) -> None:
        self.times, self.values, self.start, self.end = times, values, start, end
        self.markers: list[Marker] = list(markers)
        self.value, self.bound = value, bound
        self.refresh()

    def render(self) -> Content:
        width = max(GUTTER + 1, self.content_size.width)
        height = max(2, self.content_size.height)
        lines = chart_lines(
            self.spec, self.times, self.values, self.start, self.end, width, height, self.markers,
            value=self.value, bound=self.bound,
        )  # fmt: skip
        return Content("\n").join(lines)


class TimeAxis(Widget):
    """The time axis under the detail charts, with the restart / config-change markers' letters."""

    DEFAULT_CSS = "TimeAxis { height: 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_window(0.0, 0.0)

    def set_window(self, start: float, end: float, markers: Sequence[Marker] = ()) -> None:
        self.start, self.end = start, end
        self.markers: list[Marker] = list(markers)
        self.refresh()

    def render(self) -> Content:
        return time_axis(self.start, self.end, max(GUTTER + 1, self.content_size.width), self.markers)
