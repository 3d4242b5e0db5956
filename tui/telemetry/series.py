"""Per-endpoint ring buffers of readings' figures for sparklines and charts; an unknown figure is a gap."""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field
from itertools import islice

from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading

MAX_SAMPLES = 20_000
SERIES_NAMES: tuple[str, ...] = (
    "generation_tokens_per_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "tpot_mean_s",
    "acceptance_rate",
    "mean_acceptance_length",
    "running",
    "waiting",
    "kv_cache_usage",
)
MAX_MARKERS = 64
QUANTILE_SERIES = ("ttft_p50_s", "ttft_p95_s")
_PLAIN_SERIES = tuple(name for name in SERIES_NAMES if name not in QUANTILE_SERIES)
Bounds = tuple[float, float | None]


def is_bound(bounds: Bounds | None) -> bool:
    """A quantile that is only a bound (first or +Inf bucket): not plotted, its value is made up."""
    return bounds is not None and (bounds[0] == 0 or bounds[1] is None or math.isinf(bounds[1]))


def samples_for(history_s: float, poll_interval_s: float) -> int:
    """How many samples cover `history_s` at `poll_interval_s` (plus slack), capped."""
    wanted = math.ceil(history_s / max(poll_interval_s, 1e-3)) + 8
    return max(16, min(MAX_SAMPLES, wanted))


@dataclass
class EndpointSeries:
    maxlen: int
    times: deque[float] = field(init=False)
    series: dict[str, deque[float | None]] = field(init=False)
    up: deque[bool] = field(init=False)  # per sample: was the endpoint up
    markers: deque[tuple[float, str]] = field(init=False)  # (time, "restart" | "config"), for the charts
    bounds: dict[str, deque[Bounds | None]] = field(init=False)  # per quantile sample: its bound, if one

    def __post_init__(self) -> None:
        self.times = deque(maxlen=self.maxlen)
        self.series = {name: deque(maxlen=self.maxlen) for name in SERIES_NAMES}
        self.up = deque(maxlen=self.maxlen)
        self.markers = deque(maxlen=MAX_MARKERS)
        self.bounds = {name: deque(maxlen=self.maxlen) for name in QUANTILE_SERIES}

    def mark(self, time: float, kind: str) -> None:
        """A restart (seen in the counters) or a config change (save & restart) at `time`, once."""
        if not any(seen == kind and abs(at - time) < 1.0 for at, seen in self.markers):
            self.markers.append((time, kind))

    def add(self, time: float, figures: Figures | None) -> None:
        self.times.append(time)
        self.up.append(figures is not None)
        series = self.series
        if figures is None:
            for values in series.values():
                values.append(None)
            for gaps in self.bounds.values():
                gaps.append(None)
            return
        if figures.restarted_in_window:
            # At its start, or (start unknown) at the new process' first reading.
            ago = (
                figures.restarted_s_ago if figures.restarted_s_ago is not None else figures.restart_seen_s_ago
            )
            if ago is not None:
                self.mark(time - ago, "restart")
        for name in _PLAIN_SERIES:
            series[name].append(getattr(figures, name))
        for name in QUANTILE_SERIES:
            bounds = figures.quantile_bounds.get(name)
            bound = bounds if is_bound(bounds) else None
            self.bounds[name].append(bound)
            series[name].append(None if bound is not None else getattr(figures, name))

    def values(self, name: str) -> list[float | None]:
        return list(self.series[name])

    def window(self, name: str, since: float) -> tuple[list[float], list[float | None]]:
        """Times and values of series `name` at or after `since` (oldest first)."""
        times = list(self.times)
        values = list(self.series[name])
        start = bisect.bisect_left(times, since)
        return times[start:], values[start:]

    def bound_since(self, name: str, since: float) -> Bounds | None:
        """The newest bound among the samples of quantile `name` at or after `since`, if any."""
        bounds = self.bounds.get(name)
        if bounds is None:
            return None
        start = bisect.bisect_left(list(self.times), since)
        return next((b for b in reversed(list(bounds)[start:]) if b is not None), None)

    def tail(self, name: str, count: int) -> list[float | None]:
        values = self.series[name]
        if count <= 0:
            return []
        # not by index: a deque's is slow mid-way
        return list(values) if count >= len(values) else list(islice(reversed(values), count))[::-1]

    def __len__(self) -> int:
        return len(self.times)


class SeriesStore:  # the ring buffers of every endpoint, created on first use
    def __init__(self, maxlen: int) -> None:
        self.maxlen = maxlen
        self._endpoints: dict[str, EndpointSeries] = {}

    def endpoint(self, name: str) -> EndpointSeries:
        if name not in self._endpoints:
            self._endpoints[name] = EndpointSeries(self.maxlen)
        return self._endpoints[name]

    def add(self, reading: EndpointReading) -> None:
        self.endpoint(reading.name).add(reading.time, reading.figures if reading.up else None)
