"""A window of GPU readings: series for charts, and energy over an interval (counter, else power)."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from tui.format import fmt_times
from tui.gpu.models import GpuReading, GpuSample

DEFAULT_HISTORY_S = 1800.0
# Readings further apart than this are too sparse for energy: unknown rather than a guess.
DEFAULT_MAX_GAP_S = 5.0
MAX_POINTS_PER_GPU = 20_000


@dataclass(frozen=True)
class EnergyFigure:
    joules: float
    seconds: float
    method: Literal["counter", "power"]  # "power" when any GPU's figure was integrated from power

    @property
    def mean_power_w(self) -> float | None:
        return self.joules / self.seconds if self.seconds > 0 else None


class GpuHistory:
    """Readings per GPU (by key), trimmed to `history_s`. Feed it `add(reading)`."""

    def __init__(self, history_s: float = DEFAULT_HISTORY_S) -> None:
        self.history_s = history_s
        self._points: dict[str, deque[tuple[float, GpuSample]]] = {}

    def add(self, reading: GpuReading) -> None:
        for gpu in reading.gpus:
            self.add_sample(reading.time, gpu, cached=reading.source == "dcgm")

    def add_sample(self, time: float, gpu: GpuSample, *, cached: bool = False) -> None:
        """`cached`: the source serves a cached sample between collections (dcgm-exporter)."""
        points = self._points.setdefault(gpu.key, deque(maxlen=MAX_POINTS_PER_GPU))
        if points and time < points[-1][0]:
            return  # out of order (a clock step back): keep the series monotonic
        if cached and points and points[-1][1] == gpu:
            # dcgm-exporter's cached sample again (until DCGM collects): kept at the time first seen.
            return
        points.append((time, gpu))
        cutoff = time - self.history_s
        while points and points[0][0] < cutoff:
            points.popleft()

    def keys(self) -> list[str]:
        return list(self._points)

    def points(self, key: str, since: float | None = None) -> list[tuple[float, GpuSample]]:
        points = self._points.get(key, ())
        return [point for point in points if since is None or point[0] >= since]

    def series(self, key: str, figure: str, since: float | None = None) -> list[tuple[float, float]]:
        """(time, value) of one `GpuSample` field (or property such as memory_fraction); gaps left out."""
        values = ((time, getattr(gpu, figure)) for time, gpu in self.points(key, since))
        return [(time, float(value)) for time, value in values if type(value) in (int, float)]

    def samples_between(self, key: str, start: float, end: float) -> list[GpuSample]:
        return [gpu for time, gpu in self._points.get(key, ()) if start <= time <= end]

    def energy_between(
        self,
        start: float,
        end: float,
        keys: Iterable[str] | None = None,
        *,
        max_gap_s: float = DEFAULT_MAX_GAP_S,
    ) -> EnergyFigure | None:
        """Joules used by the GPUs (all, or `keys`) from `start` to `end`; None when it cannot be known."""
        if end <= start:
            return None
        chosen = list(self._points) if keys is None else list(keys)
        if not chosen:
            return None
        total = 0.0
        method: Literal["counter", "power"] = "counter"
        for key in chosen:
            joules = _counter_energy(self.series(key, "energy_j"), start, end, max_gap_s)
            if joules is None:
                joules = _power_energy(self.series(key, "power_w"), start, end, max_gap_s)
                method = "power"
            if joules is None:
                return None
            total += joules
        return EnergyFigure(total, end - start, method)


def _covering(points: Sequence[tuple[float, float]], start: float, end: float) -> bool:
    return len(points) >= 2 and points[0][0] <= start and points[-1][0] >= end


def _at(points: Sequence[tuple[float, float]], time: float) -> float:
    """Linear interpolation of (time, value) points at `time` (which they cover)."""
    for (t0, v0), (t1, v1) in itertools.pairwise(points):
        if t0 <= time <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (time - t0) / (t1 - t0)
    return points[-1][1]


def _span(points: list[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    """The points from the last one at or before `start` to the first one at or after `end`."""
    first = max((i for i, (t, _) in enumerate(points) if t <= start), default=None)
    last = min((i for i, (t, _) in enumerate(points) if t >= end), default=None)
    return [] if first is None or last is None else points[first : last + 1]


def _counter_energy(
    points: list[tuple[float, float]], start: float, end: float, max_gap_s: float
) -> float | None:
    span = _span(points, start, end)
    if not _covering(span, start, end):
        return None
    start_gap = span[1][0] - span[0][0] if span[0][0] < start else 0.0
    end_gap = span[-1][0] - span[-2][0] if span[-1][0] > end else 0.0
    if max(start_gap, end_gap) > max_gap_s:
        return None  # the counter at an edge would be a guess
    if any(v1 < v0 for (_, v0), (_, v1) in itertools.pairwise(span)):
        return None  # the counter was reset inside the interval
    return _at(span, end) - _at(span, start)


def _power_energy(
    points: list[tuple[float, float]], start: float, end: float, max_gap_s: float
) -> float | None:
    span = _span(points, start, end)
    if not _covering(span, start, end) or any(
        t1 - t0 > max_gap_s for (t0, _), (t1, _) in itertools.pairwise(span)
    ):
        return None
    inner = [(start, _at(span, start))] + [p for p in span if start < p[0] < end] + [(end, _at(span, end))]
    return sum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in itertools.pairwise(inner))


def energy_per_token(joules: float | None, output_tokens: int | float | None) -> float | None:
    if joules is None or output_tokens is None or output_tokens <= 0 or joules < 0:
        return None
    return joules / output_tokens


def tokens_per_joule(joules: float | None, output_tokens: int | float | None) -> float | None:
    if joules is None or output_tokens is None or joules <= 0 or output_tokens < 0:
        return None
    return output_tokens / joules


def energy_ratio_text(
    arm_joules_per_token: float | None, baseline_joules_per_token: float | None
) -> str | None:
    """The verdict line's energy part: "uses 0.60x the energy per token"."""
    if arm_joules_per_token is None or not baseline_joules_per_token:
        return None
    return f"uses {fmt_times(arm_joules_per_token / baseline_joules_per_token)} the energy per token"


def combined_series(
    history: GpuHistory, keys: Sequence[str], figure: str, how: Literal["max", "sum", "mean"], since: float
) -> tuple[list[float], list[float | None]]:
    """One figure of several GPUs combined into one series since `since`; None until all have a value."""
    series = {key: history.series(key, figure) for key in keys}
    times = sorted({time for points in series.values() for time, _ in points if time >= since})
    held: dict[str, float] = {}
    cursor = dict.fromkeys(keys, 0)
    values: list[float | None] = []
    for time in times:
        for key, points in series.items():
            while cursor[key] < len(points) and points[cursor[key]][0] <= time:
                held[key] = points[cursor[key]][1]
                cursor[key] += 1
        if len(held) < len(keys):
            values.append(None)
            continue
        found = [held[key] for key in keys]
        values.append(max(found) if how == "max" else sum(found) if how == "sum" else sum(found) / len(found))
    return times, values
