"""Derived figures over a sliding window of scrapes.

Each successful scrape is reduced to a backend `Reading` (a few hundred
numbers). Between consecutive readings a *segment* holds the counter increases;
a segment in which any counter went down, or the server's start marker
changed, is a restart: its increases are not counted (the later reading is the
new baseline), so a restart never shows as a negative rate or a spike. A series
missing at the start of a segment counts from 0 (llama.cpp prints its
per-position family only after the first speculative request). Rates are the
summed increases over the window's whole time span, like Prometheus
`increase()` without extrapolation.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from functools import reduce
from operator import add

from tui.telemetry.backends import Backend, backend_module, segment_extras_of
from tui.telemetry.backends.base import CounterKey, Delta, Reading, delta_of_model
from tui.telemetry.figures import Figures
from tui.telemetry.scraper import Scrape

_EMPTY_READING = Reading(counters={}, gauges={})


@dataclass(frozen=True, slots=True)
class _Segment:
    seconds: float
    counters: dict[CounterKey, float]
    extras: dict[str, float]
    # The counter keys in order: segments of one server share them, so they can be summed by column.
    keys: tuple[CounterKey, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.counters))


@dataclass(frozen=True, slots=True)
class _Entry:
    monotonic: float
    reading: Reading
    process_start: str | None
    segment: _Segment | None  # from the previous entry; None after a restart or for the first


def _restarted(before: _Entry, after_reading: Reading, after_start: str | None) -> bool:
    old, new = before.reading.restart_marker, after_reading.restart_marker
    if old is not None and new is not None and not math.isclose(old, new, rel_tol=0, abs_tol=1e-3):
        return True
    if before.process_start is None or after_start is None:
        return False
    return before.process_start != after_start


def _segment(
    backend: Backend, before: _Entry, reading: Reading, process_start: str | None, monotonic: float
) -> _Segment | None:
    seconds = monotonic - before.monotonic
    if seconds <= 0:
        return None
    restart = _Segment(seconds, {}, {})  # time passes, nothing is counted: a new baseline
    if _restarted(before, reading, process_start):
        return restart
    previous = before.reading.counters
    increases: dict[CounterKey, float] = {}
    shared = 0
    for key, value in reading.counters.items():
        old = previous.get(key)
        if old is None:
            increases[key] = max(value, 0.0)
            continue
        shared += 1
        increase = value - old
        if increase < 0:
            return restart  # a counter went down: the server restarted
        increases[key] = increase
    if previous and reading.counters and shared == 0:
        return restart  # no series in common: a different server or a restart with new labels
    extras: dict[str, float] = {}
    segment_extras = segment_extras_of(backend)
    if segment_extras is not None:
        extras = segment_extras(before.reading, reading, Delta(seconds, increases))
    return _Segment(seconds, increases, extras)


def _sum_segments(segments: list[_Segment]) -> Delta | None:
    """Every key summed oldest segment first (0.0 + first + second + ...), keys in first-seen order."""
    if not segments:
        return None
    delta = Delta(seconds=0.0)
    counters = delta.counters
    extras = delta.extras
    keys = segments[0].keys
    if [segment.keys for segment in segments].count(keys) == len(segments):
        # The usual case (no restart, no new series): add column by column, in C.
        columns = zip(*(segment.counters.values() for segment in segments), strict=True)
        counters.update(zip(keys, (reduce(add, column, 0.0) for column in columns), strict=True))
        for segment in segments:
            delta.seconds += segment.seconds
            for key, value in segment.extras.items():
                extras[key] = extras.get(key, 0.0) + value
        return delta
    for segment in segments:
        delta.seconds += segment.seconds
        for key, value in segment.counters.items():
            counters[key] = counters.get(key, 0.0) + value
        for key, value in segment.extras.items():
            extras[key] = extras.get(key, 0.0) + value
    return delta


class ScrapeWindow:
    """The last `window_s` seconds of scrapes of one endpoint (bounded; resets handled)."""

    def __init__(self, window_s: float, max_scrapes: int = 2048, *, backend: str | None = None) -> None:
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.window_s = window_s
        self._forced_backend = backend_module(backend)
        self._backend: Backend | None = self._forced_backend
        self._entries: deque[_Entry] = deque(maxlen=max(2, max_scrapes))
        # The window's Delta, summed once per change (figures and per-model figures both read it).
        self._delta_cache: Delta | None = None
        self._delta_cached = False

    @property
    def backend(self) -> str | None:
        return self._backend.NAME if self._backend is not None else None

    @property
    def models(self) -> tuple[str, ...]:
        return self._entries[-1].reading.models if self._entries else ()

    @property
    def span_s(self) -> float:
        """Seconds between the oldest and newest scrape in the window."""
        if len(self._entries) < 2:
            return 0.0
        return self._entries[-1].monotonic - self._entries[0].monotonic

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, scrape: Scrape) -> None:
        """Add a scrape; failed scrapes are ignored (the next one is compared with the last good one)."""
        if scrape.samples is None:
            return
        backend = self._forced_backend or backend_module(scrape.backend)
        if backend is None:
            return
        self._delta_cached = False
        if self._backend is not None and backend is not self._backend:
            self._entries.clear()  # a different server now answers on this URL
        self._backend = backend
        reading = backend.extract(scrape.samples)
        segment = None
        if self._entries:
            segment = _segment(backend, self._entries[-1], reading, scrape.process_start, scrape.monotonic)
            if scrape.monotonic <= self._entries[-1].monotonic:
                self._entries.clear()  # clock went backwards: start over
        self._entries.append(_Entry(scrape.monotonic, reading, scrape.process_start, segment))
        oldest_allowed = scrape.monotonic - self.window_s * (1 + 1e-6)
        while len(self._entries) > 1 and self._entries[0].monotonic < oldest_allowed:
            self._entries.popleft()

    def _delta(self) -> Delta | None:
        if not self._delta_cached:
            segments = [entry.segment for entry in list(self._entries)[1:] if entry.segment is not None]
            self._delta_cache = _sum_segments(segments)
            self._delta_cached = True
        return self._delta_cache

    def figures(self) -> Figures:
        if self._backend is None or not self._entries:
            return Figures()
        return self._backend.derive(self._delta(), self._entries[-1].reading)

    def figures_by_model(self) -> dict[str, Figures]:
        """Figures per model_name when the server serves several models (else empty)."""
        if self._backend is None or not self._entries or len(self._entries[-1].reading.models) < 2:
            return {}
        return _figures_by_model(self._backend, self._delta(), self._entries[-1].reading)


def _figures_by_model(backend: Backend, delta: Delta | None, last: Reading) -> dict[str, Figures]:
    if len(last.models) < 2:
        return {}
    result = {}
    for model in last.models:
        model_delta = delta_of_model(delta, model) if delta is not None else None
        gauges = last.model_gauges.get(model, {})
        result[model] = backend.derive(model_delta, Reading(counters={}, gauges=gauges, models=(model,)))
    return result


def figures_between(first: Scrape, last: Scrape, backend: str | None = None) -> Figures:
    """Figures from two scrapes (e.g. before and after an A/B run); gauges from `last`."""
    if not last.up:
        return Figures()
    name = backend or last.backend or first.backend
    window = ScrapeWindow(window_s=math.inf, max_scrapes=2, backend=name)
    window.add(first)
    window.add(last)
    return window.figures()
