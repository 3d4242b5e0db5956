"""Text for figures: units, "–" for unknown, sparklines and small bars. Pure functions, no widgets."""

from __future__ import annotations

import math
import time as time_module
from collections.abc import Sequence

UNKNOWN = "–"
SPARK_CHARS = "▁▂▃▄▅▆▇█"
BAR_CHARS = " ▁▂▃▄▅▆▇█"


def _known(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def fmt_number(value: float | None, digits: int = 1) -> str:
    if not _known(value):
        return UNKNOWN
    assert value is not None
    if abs(value) >= 10_000:
        return f"{value / 1000:.0f}k"
    if abs(value) >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.{digits}f}"


def fmt_count(value: float | None) -> str:
    if not _known(value):
        return UNKNOWN
    assert value is not None
    return f"{value:.0f}"


def fmt_seconds(value: float | None) -> str:
    """Latency with a unit that keeps three significant digits: 850µs, 51.4ms, 1.23s."""
    if not _known(value):
        return UNKNOWN
    assert value is not None
    if value < 0.001:
        return f"{value * 1e6:.0f}µs"
    if value < 1:
        return f"{value * 1000:.3g}ms"
    if value < 100:
        return f"{value:.3g}s"
    return f"{value:.0f}s"


def fmt_quantile(value: float | None, bounds: tuple[float, float | None] | None = None) -> str:
    """A histogram quantile, or the bound it really is: "<100ms" in the first bucket, ">10.0s" in
    the +Inf bucket, "~850ms" inside a bucket wider than the value (see Figures.quantile_bounds)."""
    if not _known(value) or bounds is None:
        return fmt_seconds(value)
    lower, upper = bounds
    if upper is None or math.isinf(upper):
        return f">{fmt_seconds(lower)}"
    if lower == 0:
        return f"<{fmt_seconds(upper)}"
    return f"~{fmt_seconds(value)}"


def window_text(covered_s: float | None, window_s: float | None, restarted_s_ago: float | None) -> str | None:
    """ "restarted 12s ago · window 8s of 60s" when the figures cover less than usual, else None."""
    parts = []
    if restarted_s_ago is not None:
        parts.append(f"restarted {fmt_age(restarted_s_ago)} ago")
    if covered_s is not None and window_s is not None and covered_s < 0.5 * window_s:
        parts.append(f"window {covered_s:.0f}s of {window_s:.0f}s")
    return " · ".join(parts) or None


def fmt_ratio(value: float | None) -> str:
    """A 0..1 rate as a two-decimal fraction (acceptance is quoted this way in every backend log)."""
    if not _known(value):
        return UNKNOWN
    assert value is not None
    return f"{value:.2f}"


def fmt_percent(value: float | None) -> str:
    if not _known(value):
        return UNKNOWN
    assert value is not None
    return f"{value * 100:.1f}%" if value < 0.1 else f"{value * 100:.0f}%"


def fmt_age(seconds: float | None) -> str:
    if seconds is None:
        return UNKNOWN
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.0f}h"


def fmt_clock(timestamp: float | None) -> str:
    """Local wall-clock time of day (HH:MM:SS)."""
    if timestamp is None:
        return UNKNOWN
    return time_module.strftime("%H:%M:%S", time_module.localtime(timestamp))


def sparkline(
    values: Sequence[float | None], width: int, low: float | None = None, high: float | None = None
) -> str:
    """The last `width` values as block characters; unknown values are blanks.

    The scale runs from `low` to `high` (default: the smallest and largest known values), so a
    flat line shows as a flat line.
    """
    if width <= 0:
        return ""
    tail = list(values)[-width:]
    known = [value for value in tail if _known(value)]
    if not known:
        return " " * width
    top = high if high is not None else max(known)  # type: ignore[type-var]
    bottom = low if low is not None else min(known)  # type: ignore[type-var]
    span = top - bottom  # type: ignore[operator]
    chars = []
    for value in tail:
        if not _known(value):
            chars.append(" ")
        elif span <= 0:
            chars.append(SPARK_CHARS[len(SPARK_CHARS) // 2])
        else:
            level = (value - bottom) / span  # type: ignore[operator]
            index = round(min(1.0, max(0.0, level)) * (len(SPARK_CHARS) - 1))
            chars.append(SPARK_CHARS[index])
    return "".join(chars).rjust(width)


def bucketed(
    times: Sequence[float], values: Sequence[float | None], start: float, end: float, columns: int
) -> list[float | None]:
    """`columns` means over equal slices of [start, end].

    A slice with samples but no known value (endpoint down, figure missing) is None; a slice with
    no sample at all (columns narrower than the poll interval) repeats the slice before it.
    """
    if columns <= 0 or end <= start:
        return []
    sums = [0.0] * columns
    counts = [0] * columns
    sampled = [False] * columns
    width = (end - start) / columns
    for time, value in zip(times, values, strict=False):
        if time < start or time > end:
            continue
        column = min(columns - 1, int((time - start) / width))
        sampled[column] = True
        if _known(value):
            sums[column] += value  # type: ignore[operator]
            counts[column] += 1
    result: list[float | None] = []
    previous: float | None = None
    started = False
    for column in range(columns):
        if sampled[column]:
            started = True
            previous = sums[column] / counts[column] if counts[column] else None
            result.append(previous)
        else:
            result.append(previous if started else None)
    return result


def chart_rows(
    values: Sequence[float | None],
    width: int,
    height: int,
    low: float | None = None,
    high: float | None = None,
) -> list[str]:
    """A block chart `height` rows tall (top row first) of the last `width` values (axis `low`..`high`)."""
    if width <= 0 or height <= 0:
        return []
    tail = list(values)[-width:]
    known = [value for value in tail if _known(value)]
    rows = [[" "] * len(tail) for _ in range(height)]
    if known:
        top = high if high is not None else max(known)  # type: ignore[type-var]
        bottom = low if low is not None else min(known)  # type: ignore[type-var]
        span = top - bottom  # type: ignore[operator]
        steps = height * 8
        for column, value in enumerate(tail):
            if not _known(value):
                continue
            level = 0.5 if span <= 0 else (value - bottom) / span  # type: ignore[operator]
            eighths = max(1, round(min(1.0, max(0.0, level)) * steps))
            for row in range(height):
                filled = eighths - (height - 1 - row) * 8
                if filled >= 8:
                    rows[row][column] = "█"
                elif filled > 0:
                    rows[row][column] = BAR_CHARS[filled]
    return ["".join(row).rjust(width) for row in rows]


def position_bars(rates: Sequence[float] | None, limit: int = 4) -> str:
    """Per-position acceptance as a bar and a value each: '▇.80 ▅.60'."""
    if not rates:
        return UNKNOWN
    parts = []
    for rate in list(rates)[:limit]:
        index = round(min(1.0, max(0.0, rate)) * (len(BAR_CHARS) - 1))
        parts.append(f"{BAR_CHARS[index] if index else '▁'}{rate:.2f}"[:5].replace("0.", "."))
    more = "…" if len(rates) > limit else ""
    return " ".join(parts) + more
