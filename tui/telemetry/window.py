"""Derived figures over a sliding window of scrapes.

Each successful scrape is reduced to a backend `PageSnapshot` (a few hundred
numbers). Between consecutive page snapshots a *segment* holds the counter increases.

Restarts: a segment in which the server's start marker changed, or most
counters went down, is a restart. Like Prometheus' `increase()`, its counters count from
0 (the new process' values are the increase), and the figures start afresh
from that segment: nothing before it is mixed in (a restart is how k changes,
so old and new draft positions never share a window). `restarted_in_window`
says so, and `window_short` while the fresh window is under half the
configured one. A change in the set of draft positions without a visible
restart also starts afresh (that segment is a baseline).

A single series that went down (the rest going on) was reset on its own: it
counts from 0 in that segment, and the window goes on.

Missing series: a series absent from a page (not printed, or NaN) keeps its
last value, so it is compared with that when it comes back. A series that
appears is a baseline (its first value is not an increase), except where the
server documents that it starts at 0 (`Backend.ZERO_START`, llama.cpp's
per-position family), or after a restart. Rates are the summed increases over
the covered time, like `increase()` without extrapolation.

Inconsistent pages (the same series twice, e.g. a proxy merging pages) are not
added: `inconsistent` names the duplicate and the figures are unknown.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from operator import add

from tui.telemetry.backends import Backend, backend_module, segment_extras_of
from tui.telemetry.backends.base import CounterKey, Delta, PageSnapshot, SeriesMemo, delta_of_model
from tui.telemetry.figures import Figures
from tui.telemetry.scraper import Scrape

_EMPTY_PAGE = PageSnapshot(counters={}, gauges={})
_POSITIONS = "accepted_per_pos:"
# Newest readings left out of the figures while a series is missing from them (NaN in a scrape or two).
_GAP_READINGS = 2


@dataclass(frozen=True, slots=True)
class _Segment:
    seconds: float
    counters: dict[CounterKey, float]
    extras: dict[str, float]
    # A restart: counted from zero, and the figures start with this segment.
    restart: bool = False
    # The figures start after this segment (a baseline: nothing counted), e.g. the draft positions changed.
    fresh_after: bool = False
    # Quantities with a series missing (not printed, or NaN) from this segment's page: their increase
    # over it is not known yet (the next reading has it), so the figures end before it while it is newest.
    missing: tuple[str, ...] = ()
    # Quantities with a series first seen on this page (a baseline: counted from the next reading).
    baselines: tuple[str, ...] = ()
    # The counter keys in order: segments of one server share them, so they can be summed by column.
    keys: tuple[CounterKey, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.counters))


@dataclass(frozen=True, slots=True)
class _Entry:
    monotonic: float
    page: PageSnapshot
    process_start: str | None
    segment: _Segment | None  # from the previous entry; None for the first
    # The page's counters plus the last value of series missing from it (compared on the next scrape).
    counters: Mapping[CounterKey, float]


def _restarted(before: _Entry, after_page: PageSnapshot, after_start: str | None) -> bool:
    old, new = before.page.restart_marker, after_page.restart_marker
    if old is not None and new is not None and not math.isclose(old, new, rel_tol=0, abs_tol=1e-3):
        return True
    if before.process_start is None or after_start is None:
        return False
    return before.process_start != after_start


def _zero_start(backend: Backend) -> tuple[str, ...]:
    return getattr(backend, "ZERO_START", ())


def _running_max(backend: Backend) -> tuple[str, ...]:
    return getattr(backend, "RUNNING_MAX", ())


def _new_position(name: str, previous: Mapping[CounterKey, float]) -> bool:
    """True when `previous` has draft positions but not this one."""
    names = {key[0] for key in previous if key[0].startswith(_POSITIONS)}
    return bool(names) and name not in names


def _counted_from_zero(
    backend: Backend, before: _Entry, page: PageSnapshot, seconds: float
) -> tuple[_Segment, Mapping[CounterKey, float]]:
    """The segment of a restart: the new process' counters are the increase."""
    increases = {key: max(value, 0.0) for key, value in page.counters.items()}
    extras: dict[str, float] = {}
    segment_extras = segment_extras_of(backend)
    if segment_extras is not None:
        extras = segment_extras(_EMPTY_PAGE, page, Delta(seconds, increases))
    return _Segment(seconds, increases, extras, restart=True), page.counters


def _segment(
    backend: Backend, before: _Entry, page: PageSnapshot, process_start: str | None, monotonic: float
) -> tuple[_Segment | None, Mapping[CounterKey, float]]:
    """The segment from `before` to `page`, and the counters to compare the next page with."""
    seconds = monotonic - before.monotonic
    if seconds <= 0:
        return None, page.counters
    if _restarted(before, page, process_start):
        return _counted_from_zero(backend, before, page, seconds)
    previous = before.counters
    current = page.counters
    increases: dict[CounterKey, float] = {}
    shared = 0
    carried: dict[CounterKey, float] | None = None
    positions_changed = False
    went_down = 0
    baselines: dict[str, None] = {}
    for key, value in current.items():
        old = previous.get(key)
        if old is None:
            name = key[0]
            if name.startswith(_POSITIONS) and _new_position(name, previous):
                positions_changed = True  # k changed: old and new positions must not share a window
            if name.startswith(_zero_start(backend)):
                increases[key] = max(value, 0.0)  # documented to appear at 0
            else:
                baselines[name] = None
            continue  # otherwise a new series is a baseline: its first value is not an increase
        shared += 1
        increase = value - old
        if increase < 0:
            if key[0] in _running_max(backend):
                # Not monotonic by construction (two requests, not one snapshot): keep the highest.
                carried = dict(current) if carried is None else carried
                carried[key] = old
                increases[key] = 0.0
                continue
            went_down += 1
            increase = max(value, 0.0)  # this series was reset: like increase(), count from zero
        increases[key] = increase
    if went_down and 2 * went_down >= sum(1 for value in previous.values() if value > 0):
        # Most counters went down: the server restarted without a visible start marker.
        return _counted_from_zero(backend, before, page, seconds)
    if previous and current and shared == 0:
        # No series in common: a different server, or a restart with new labels. Start afresh.
        return _Segment(seconds, {}, {}, fresh_after=True), current
    if positions_changed:
        return _Segment(seconds, {}, {}, fresh_after=True), current
    missing: dict[CounterKey, float] = {}
    if len(previous) > shared:
        # Series missing from this page (not printed, or NaN) keep their last value.
        missing = {key: value for key, value in previous.items() if key not in current}
        if missing:
            carried = dict(current) if carried is None else carried
            carried.update(missing)
    extras: dict[str, float] = {}
    segment_extras = segment_extras_of(backend)
    if segment_extras is not None:
        extras = segment_extras(before.page, page, Delta(seconds, increases))
    segment = _Segment(
        seconds,
        increases,
        extras,
        missing=tuple(dict.fromkeys(key[0] for key in missing if key[0] not in _running_max(backend))),
        baselines=tuple(baselines),
    )
    return segment, current if carried is None else carried


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
        for counter, value in segment.counters.items():
            counters[counter] = counters.get(counter, 0.0) + value
        for key, value in segment.extras.items():
            extras[key] = extras.get(key, 0.0) + value
    return delta


class ScrapeWindow:
    """The last `window_s` seconds of scrapes of one endpoint (bounded; resets handled)."""

    def __init__(
        self,
        window_s: float,
        max_scrapes: int = 2048,
        *,
        backend: str | None = None,
        memo: SeriesMemo | None = None,
    ) -> None:
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.window_s = window_s
        # What each series of this endpoint means to its backend (`memo`: shared with another window
        # of the same endpoint).
        self._memo = memo or SeriesMemo()
        self._forced_backend = backend_module(backend)
        self._backend: Backend | None = self._forced_backend
        self._entries: deque[_Entry] = deque(maxlen=max(2, max_scrapes))
        # The window's Delta, summed once per change (figures and per-model figures both read it).
        self._delta_cache: Delta | None = None
        self._delta_cached = False
        self._covered_s = 0.0
        self._restart_at: float | None = None  # monotonic time of the newest restart in the window
        # Why the newest readings are not in the figures, or a counter in them is unknown (missing series).
        self._gap_note: str | None = None
        # Why the newest page was not used (the same series twice); None when it was.
        self.inconsistent: str | None = None

    @property
    def backend(self) -> str | None:
        return self._backend.NAME if self._backend is not None else None

    @property
    def models(self) -> tuple[str, ...]:
        return self._entries[-1].page.models if self._entries else ()

    @property
    def span_s(self) -> float:
        """Seconds between the oldest and newest scrape in the window."""
        if len(self._entries) < 2:
            return 0.0
        return self._entries[-1].monotonic - self._entries[0].monotonic

    @property
    def covered_s(self) -> float:
        """Seconds the figures cover: the window, or less after a restart inside it."""
        self._delta()
        return self._covered_s

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
        page = backend.extract(scrape.samples, self._memo)
        live = getattr(backend, "live_counters", None)
        if live is not None and scrape.extra_counters:
            page = live(page, scrape.extra_counters)
        self.inconsistent = page.duplicate and f"inconsistent page: {page.duplicate}"
        if self.inconsistent:
            return  # summing or averaging two copies of a series gives wrong figures
        segment = None
        counters: Mapping[CounterKey, float] = page.counters
        if self._entries:
            segment, counters = _segment(
                backend, self._entries[-1], page, scrape.process_start, scrape.monotonic
            )
            if scrape.monotonic <= self._entries[-1].monotonic:
                self._entries.clear()  # clock went backwards: start over
                segment, counters = None, page.counters
        self._entries.append(_Entry(scrape.monotonic, page, scrape.process_start, segment, counters))
        oldest_allowed = scrape.monotonic - self.window_s * (1 + 1e-6)
        while len(self._entries) > 1 and self._entries[0].monotonic < oldest_allowed:
            self._entries.popleft()

    def _delta(self) -> Delta | None:
        if not self._delta_cached:
            segments: list[_Segment] = []
            ends: list[float] = []  # monotonic time each segment ends at
            restart_at = None
            for entry in list(self._entries)[1:]:
                segment = entry.segment
                if segment is None:
                    continue
                if segment.restart:
                    segments, ends = [], []  # start afresh: counted from zero in this segment
                    restart_at = entry.monotonic
                elif segment.fresh_after:
                    segments, ends = [], []
                    continue
                segments.append(segment)
                ends.append(entry.monotonic)
            segments = self._without_gap(segments, ends)
            self._delta_cache = _sum_segments(segments)
            self._covered_s = self._delta_cache.seconds if self._delta_cache is not None else 0.0
            self._restart_at = restart_at
            self._delta_cached = True
        return self._delta_cache

    def _without_gap(self, segments: list[_Segment], ends: list[float]) -> list[_Segment]:
        """The segments, less the newest ones whose page lacked a series (missing or NaN): over those
        that series' increase is not known yet, and counting their seconds without it would make its
        figures too low (or a ratio of two counters wrong). At most `_GAP_READINGS` (a series gone for
        good must not freeze the figures); kept when every segment lacks it (the quantity then has no
        increase at all, and its figure is None)."""
        self._gap_note = None
        end = len(segments)
        while end > 0 and len(segments) - end < _GAP_READINGS and segments[end - 1].missing:
            end -= 1
        newest = segments[-1] if segments else None
        if newest is None:
            return segments
        names = ", ".join(dict.fromkeys(name for segment in segments[end:] for name in segment.missing))
        if 0 < end < len(segments):
            ago = ends[-1] - ends[end - 1]
            self._gap_note = (
                f"figures end at the reading {ago:.0f} s ago: not in the newer readings (missing or NaN): "
                f"{names}"
            )
            return segments[:end]
        notes = []
        if newest.missing:
            notes.append(f"not in the newest reading (missing or NaN), no increase known: {names}")
        if newest.baselines:
            notes.append(
                f"first seen in the newest reading, counted from the next: {', '.join(newest.baselines)}"
            )
        self._gap_note = "; ".join(notes) or None
        return segments

    def _qualified(self, figures: Figures) -> Figures:
        """The (freshly derived) figures, told what they cover and why: restart, short window."""
        delta = self._delta()
        figures.covered_s = round(self._covered_s, 3) if delta is not None else None
        why: list[str] = []
        if self._restart_at is not None:
            ago = self._entries[-1].monotonic - self._restart_at
            figures.restarted_in_window = True
            figures.restarted_s_ago = round(ago, 3)
            why.append(f"restarted during the window ({ago:.0f} s ago), counted from zero")
        if math.isfinite(self.window_s) and self._covered_s < 0.5 * self.window_s:
            figures.window_short = True
            why.append(f"window still short: {self._covered_s:.0f} s of {self.window_s:.0f} s")
        if self._gap_note is not None:
            why.append(self._gap_note)
        if why:
            figures.notes["window"] = "; ".join(why)
        return figures

    def figures(self) -> Figures:
        if self.inconsistent:
            return Figures(notes={"window": self.inconsistent})
        if self._backend is None or not self._entries:
            return Figures()
        return self._qualified(self._backend.derive(self._delta(), self._entries[-1].page))

    def figures_by_model(self) -> dict[str, Figures]:
        """Figures per model_name when the server serves several models (else empty)."""
        if self.inconsistent:
            return {}
        if self._backend is None or not self._entries or len(self._entries[-1].page.models) < 2:
            return {}
        by_model = _figures_by_model(self._backend, self._delta(), self._entries[-1].page)
        return {model: self._qualified(figures) for model, figures in by_model.items()}


def _figures_by_model(backend: Backend, delta: Delta | None, last: PageSnapshot) -> dict[str, Figures]:
    if len(last.models) < 2:
        return {}
    result = {}
    for model in last.models:
        model_delta = delta_of_model(delta, model) if delta is not None else None
        gauges = last.model_gauges.get(model, {})
        result[model] = backend.derive(model_delta, PageSnapshot(counters={}, gauges=gauges, models=(model,)))
    return result


def figures_between(
    first: Scrape, last: Scrape, backend: str | None = None, *, memo: SeriesMemo | None = None
) -> Figures:
    """Figures from two scrapes (e.g. before and after an A/B run); gauges from `last`.
    `memo`: the endpoint's, when the caller keeps one between calls."""
    if not last.up:
        return Figures()
    name = backend or last.backend or first.backend
    window = ScrapeWindow(window_s=math.inf, max_scrapes=2, backend=name, memo=memo)
    window.add(first)
    window.add(last)
    return window.figures()
