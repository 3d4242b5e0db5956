"""Derived figures over a sliding window of scrapes: counter increases between consecutive pages, summed
(`increase()` without extrapolation); restarts count from zero and start the figures afresh."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import reduce
from itertools import pairwise
from operator import add

from tui.format import fmt_duration
from tui.telemetry.backends import Backend, backend_module
from tui.telemetry.backends.base import CounterKey, Delta, PageSnapshot, SeriesMemo, delta_of_model
from tui.telemetry.figures import LIFETIME_FIGURES, Figures
from tui.telemetry.plausible_figures import drop_impossible
from tui.telemetry.scraper import Scrape

_EMPTY_PAGE = PageSnapshot(counters={}, gauges={})
_POSITIONS = "accepted_per_pos:"
# Newest readings left out of the figures while a series is missing from them (NaN in a scrape or two).
_GAP_READINGS = 2
RATE_FIGURES = ("generation_tokens_per_s", "prompt_tokens_per_s", "requests_per_s")
NEEDS_TWO_SCRAPES = "a rate needs two scrapes: from the next reading on"
LIFETIME_NOTE = "lifetime: since the server started (the window's own figure from the next reading on)"


@dataclass(frozen=True, slots=True)
class _Segment:
    seconds: float
    counters: dict[CounterKey, float]
    extras: dict[str, float]
    # A restart: counted from zero, and the figures start with this segment.
    restart: bool = False
    # (monotonic time the new process began counting, from what), or (None, why not known: `seconds` 0).
    restart_start: tuple[float | None, str] = (None, "")
    # The figures start after this segment (a baseline: nothing counted).
    fresh_after: bool = False
    # Quantities with a series missing (not printed, or NaN) from this page: increase not known yet.
    missing: tuple[str, ...] = ()
    # Quantities with a series first seen on this page (a baseline: counted from the next reading).
    baselines: tuple[str, ...] = ()
    # Series that went down while the others did not (not a restart): a suspect page.
    went_down_alone: tuple[str, ...] = ()
    # The number of draft positions before and after, when they changed on this page (k changed).
    k_change: tuple[int, int] | None = None
    # The counter keys in order: segments sharing them are summed by column.
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
    return None not in (before.process_start, after_start) and before.process_start != after_start


def _positions(counters: Mapping[CounterKey, float]) -> set[str]:
    return {key[0] for key in counters if key[0].startswith(_POSITIONS)}


def _restart_start(before: _Entry, page: PageSnapshot, after: Scrape) -> tuple[float | None, str]:
    """When the new process began counting and by what, or (None, why not); believed between the readings."""
    if page.restart_marker is not None:
        name = page.restart_name or "its start time"
        old = before.page.restart_marker
        if old is not None and math.isclose(old, page.restart_marker, rel_tol=0, abs_tol=1e-3):
            return None, f"the counters went down but {name} did not change"
        started = after.monotonic - (after.time - page.restart_marker)
        if before.monotonic < started <= after.monotonic:
            return started, name
        return None, f"{name} is not between the two readings (the server's clock differs from this one's)"
    if after.process_start is not None:
        header = "Process-Start-Time-Unix"
        try:
            started = float(after.process_start) / 1e6  # llama.cpp: µs of its monotonic clock
        except ValueError:
            return None, f"{header} is not a number"
        if math.isfinite(started) and before.monotonic < started <= after.monotonic:
            return started, header
        return None, (
            f"{header} (llama.cpp's monotonic clock) is not between the two readings on this machine's "
            "clock: the server runs on another machine"
        )
    return None, "the page has no start time"


def _segment_extras(
    backend: Backend, start: PageSnapshot, end: PageSnapshot, delta: Delta
) -> dict[str, float]:
    segment_extras = getattr(backend, "segment_extras", None)
    return {} if segment_extras is None else segment_extras(start, end, delta)


def _counted_from_zero(
    backend: Backend, before: _Entry, page: PageSnapshot, after: Scrape
) -> tuple[_Segment, Mapping[CounterKey, float]]:
    started, why = _restart_start(before, page, after)
    seconds = 0.0 if started is None else after.monotonic - started
    increases = {key: max(value, 0.0) for key, value in page.counters.items()}
    extras = _segment_extras(backend, _EMPTY_PAGE, page, Delta(seconds, increases))
    return _Segment(seconds, increases, extras, restart=True, restart_start=(started, why)), page.counters


def _segment(
    backend: Backend, before: _Entry, page: PageSnapshot, after: Scrape
) -> tuple[_Segment | None, Mapping[CounterKey, float]]:
    """The segment from `before` to `after`, and the counters to compare the next page with."""
    seconds = after.monotonic - before.monotonic
    if seconds <= 0:
        return None, page.counters
    if _restarted(before, page, after.process_start):
        return _counted_from_zero(backend, before, page, after)
    previous, current = before.counters, page.counters
    zero_start: tuple[str, ...] = getattr(backend, "ZERO_START", ())
    running_max: tuple[str, ...] = getattr(backend, "RUNNING_MAX", ())
    increases: dict[CounterKey, float] = {}
    shared = 0
    carried: dict[CounterKey, float] | None = None
    positions_changed = False
    went_down = 0
    down_names: dict[str, None] = {}
    baselines: dict[str, None] = {}
    for key, value in current.items():
        old = previous.get(key)
        if old is None:
            name = key[0]
            old_positions = _positions(previous) if name.startswith(_POSITIONS) else set()
            if old_positions and name not in old_positions:
                positions_changed = True  # k changed: old and new positions must not share a window
            if name.startswith(zero_start):
                increases[key] = max(value, 0.0)  # documented to appear at 0
            else:
                baselines[name] = None
            continue  # otherwise a new series is a baseline: its first value is not an increase
        shared += 1
        increase = value - old
        if increase < 0:
            if key[0] in running_max:
                # Not monotonic by construction (two requests, not one snapshot): keep the highest.
                carried = dict(current) if carried is None else carried
                carried[key] = old
                increases[key] = 0.0
                continue
            went_down += 1
            down_names[key[0]] = None
            increase = max(value, 0.0)  # this series was reset: like increase(), count from zero
        increases[key] = increase
    if went_down and 2 * went_down >= sum(1 for value in previous.values() if value > 0):
        # Most counters went down: the server restarted without a visible start marker.
        return _counted_from_zero(backend, before, page, after)
    if previous and current and shared == 0:
        # No series in common: a different server, or a restart with new labels. Start afresh.
        return _Segment(seconds, {}, {}, fresh_after=True), current
    if positions_changed:
        change = (len(_positions(previous)), len(_positions(current)))
        return _Segment(seconds, {}, {}, fresh_after=True, k_change=change), current
    missing: dict[CounterKey, float] = {}
    if len(previous) > shared:
        # Series missing from this page (not printed, or NaN) keep their last value.
        missing = {key: value for key, value in previous.items() if key not in current}
        if missing:
            carried = dict(current) if carried is None else carried
            carried.update(missing)
    extras = _segment_extras(backend, before.page, page, Delta(seconds, increases))
    segment = _Segment(
        seconds,
        increases,
        extras,
        missing=tuple(dict.fromkeys(key[0] for key in missing if key[0] not in running_max)),
        baselines=tuple(baselines),
        went_down_alone=tuple(down_names),
    )
    return segment, current if carried is None else carried


_RATE_UNKNOWN = (
    "unknown: the server restarted inside the window at a time not known, so the time its counters "
    "cover is not known either (counted from the first reading after the restart)"
)


@dataclass(frozen=True, slots=True)
class _Restart:
    """The newest restart in the window; `baseline`: the figures start at its first reading."""

    started: float | None
    why: str
    before: float
    seen: float
    baseline: bool = False

    def note(self, newest: float) -> str:
        if self.started is not None:
            ago = fmt_duration(newest - self.started)
            return f"restarted during the window ({ago} ago, by {self.why}), counted from zero since then"
        first, seen = fmt_duration(newest - self.before), fmt_duration(newest - self.seen)
        between = f"between the readings {first} and {seen} ago"
        if self.baseline:
            counted = f"the figures count from its first reading ({seen} ago)"
        else:
            counted = "counted from zero; no rates (the time its counters cover is not known)"
        return f"restarted during the window, {between} (start time unknown: {self.why}); {counted}"


def _sum_segments(segments: list[_Segment]) -> Delta | None:
    """Every key summed oldest segment first (0.0 + first + second + ...), keys in first-seen order."""
    if not segments:
        return None
    delta = Delta(seconds=reduce(add, (segment.seconds for segment in segments), 0.0))
    keys = segments[0].keys
    same_keys = all(segment.keys == keys for segment in segments)
    if same_keys:  # the usual case: summed by column, in C
        columns = zip(*(segment.counters.values() for segment in segments), strict=True)
        delta.counters.update(zip(keys, (reduce(add, column, 0.0) for column in columns), strict=True))
    for segment in segments:
        if not same_keys:
            for counter, value in segment.counters.items():
                delta.counters[counter] = delta.counters.get(counter, 0.0) + value
        for key, value in segment.extras.items():
            delta.extras[key] = delta.extras.get(key, 0.0) + value
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
        self._memo = memo or SeriesMemo()
        self._forced_backend = backend_module(backend)
        self._backend: Backend | None = self._forced_backend
        self._entries: deque[_Entry] = deque(maxlen=max(2, max_scrapes))
        self._delta_cache: Delta | None = None
        self._delta_cached = False
        self._covered_s = 0.0
        self._restart: _Restart | None = None  # the newest restart in the window
        self._k_change: tuple[int, int, float] | None = None  # draft positions before, after, when
        self._gap_note: str | None = None  # why the newest readings are not in the figures
        self.inconsistent: str | None = None  # why the newest page was not used (the same series twice)
        # Pages dropped because one counter went down alone, and figures dropped as impossible (lifetime).
        self.dropped_pages = 0
        self.impossible_figures = 0
        self._held_down: tuple[str, ...] = ()
        self._dropped_at: float | None = None
        self._dropped_why = ""
        self._checked_entry: float | None = None  # the newest scrape whose impossible figures were counted

    @property
    def backend(self) -> str | None:
        return self._backend.NAME if self._backend is not None else None

    @property
    def models(self) -> tuple[str, ...]:
        return self._entries[-1].page.models if self._entries else ()

    @property
    def covered_s(self) -> float:
        self._delta()
        return self._covered_s

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, scrape: Scrape) -> None:
        """Add a scrape; failed scrapes are ignored."""
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
            segment, counters = _segment(backend, self._entries[-1], page, scrape)
            if scrape.monotonic <= self._entries[-1].monotonic:
                self._entries.clear()  # clock went backwards: start over
                segment, counters = None, page.counters
            elif segment is not None and segment.went_down_alone not in ((), self._held_down):
                # One counter going backwards alone: dropped (lower again next page: a reset of it alone).
                self._held_down = segment.went_down_alone
                self.dropped_pages += 1
                self._dropped_at = scrape.monotonic
                self._dropped_why = ", ".join(segment.went_down_alone)
                return
        self._held_down = ()
        self._entries.append(_Entry(scrape.monotonic, page, scrape.process_start, segment, counters))
        oldest_allowed = scrape.monotonic - self.window_s * (1 + 1e-6)
        while len(self._entries) > 1 and self._entries[0].monotonic < oldest_allowed:
            self._entries.popleft()

    def _delta(self) -> Delta | None:
        if not self._delta_cached:
            segments: list[_Segment] = []
            ends: list[float] = []  # monotonic time each segment ends at
            restart: _Restart | None = None
            k_change: tuple[int, int, float] | None = None
            for before, entry in pairwise(self._entries):
                segment = entry.segment
                if segment is None:
                    continue
                if segment.restart:
                    segments, ends = [], []  # start afresh: counted from zero in this segment
                    started, why = segment.restart_start
                    restart = _Restart(started, why, before.monotonic, entry.monotonic)
                elif segment.fresh_after:
                    segments, ends = [], []
                    if segment.k_change is not None:
                        k_change = (*segment.k_change, entry.monotonic)
                    continue
                segments.append(segment)
                ends.append(entry.monotonic)
            if restart is not None and restart.started is None and len(segments) > 1:
                # When the new process started is not known, nor is the time its first counts cover:
                # its first reading is a baseline, the figures count from there.
                segments, ends = segments[1:], ends[1:]
                restart = replace(restart, baseline=True)
            segments = self._without_gap(segments, ends)
            self._delta_cache = _sum_segments(segments)
            self._covered_s = self._delta_cache.seconds if self._delta_cache is not None else 0.0
            self._restart = restart
            self._k_change = k_change
            self._delta_cached = True
        return self._delta_cache

    def _without_gap(self, segments: list[_Segment], ends: list[float]) -> list[_Segment]:
        """The segments less the newest (at most `_GAP_READINGS`) whose page lacked a series."""
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
                f"figures end at the reading {fmt_duration(ago)} ago: not in the newer readings "
                f"(missing or NaN): {names}"
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
        delta = self._delta()
        figures.covered_s = round(self._covered_s, 3) if delta is not None else None
        why: list[str] = []
        newest = self._entries[-1].monotonic
        restart = self._restart
        time_unknown = restart is not None and restart.started is None and not restart.baseline
        if restart is not None:
            figures.restarted_in_window = True
            figures.restart_seen_s_ago = round(newest - restart.seen, 3)
            why.append(restart.note(newest))
            if restart.started is not None:
                figures.restarted_s_ago = round(newest - restart.started, 3)
        if time_unknown:
            figures.covered_s = None  # the new process' counters cover an unknown part of the segment
            for name in RATE_FIGURES:
                if getattr(figures, name) is None:
                    other = figures.notes.get(name)
                    figures.notes[name] = _RATE_UNKNOWN if other is None else f"{_RATE_UNKNOWN}; {other}"
        if math.isfinite(self.window_s) and self._covered_s < 0.5 * self.window_s:
            figures.window_short = True
            if not time_unknown:
                why.append(
                    f"window still short: {fmt_duration(self._covered_s)} of {fmt_duration(self.window_s)}"
                )
        if self._gap_note is not None:
            why.append(self._gap_note)
        if self._dropped_at is not None and newest - self._dropped_at <= self.window_s:
            pages = "page" if self.dropped_pages == 1 else "pages"
            why.append(
                f"{self.dropped_pages} inconsistent {pages} dropped: {self._dropped_why} went down while "
                "the other counters did not (not a restart)"
            )
        if figures.per_position_acceptance is None and self._k_change is not None:
            before, after, at = self._k_change
            figures.notes["per_position_acceptance"] = (
                f"the draft positions changed (k {before} → {after}) {fmt_duration(newest - at)} ago: "
                "per-position acceptance starts afresh, from the next reading"
            )
        dropped = drop_impossible(figures)
        if dropped and self._checked_entry != newest:
            self._checked_entry = newest
            self.impossible_figures += dropped
        if why:
            figures.notes["window"] = "; ".join(why)
        return figures

    def figures(self) -> Figures:
        if self.inconsistent:
            return Figures(notes={"window": self.inconsistent})
        if self._backend is None or not self._entries:
            return Figures()
        figures = self._qualified(self._backend.derive(self._delta(), self._entries[-1].page))
        if len(self._entries) == 1:
            self._first_reading(figures)
        return figures

    def _first_reading(self, figures: Figures) -> None:
        """One scrape: the counters since the server started go to `lifetime`."""
        assert self._backend is not None
        for name in RATE_FIGURES:
            if getattr(figures, name) is None:
                figures.notes.setdefault(name, NEEDS_TWO_SCRAPES)
        page = self._entries[-1].page
        if not page.counters:
            return
        derived = self._backend.derive(Delta(seconds=0.0, counters=dict(page.counters)), page)
        known = {
            name: getattr(derived, name) for name in LIFETIME_FIGURES if getattr(derived, name) is not None
        }
        if not known:
            return
        bounds = {name: bound for name, bound in derived.quantile_bounds.items() if name in known}
        notes = {name: derived.notes[name] for name in bounds if name in derived.notes}
        lifetime = Figures(**known, quantile_bounds=bounds, notes=notes)
        if drop_impossible(lifetime):  # a garbled page: as the window's figures would be, said
            for name, note in lifetime.notes.items():
                if getattr(figures, name) is None and getattr(lifetime, name) is None:
                    figures.notes.setdefault(name, f"lifetime: {note}")
        shown = [name for name in LIFETIME_FIGURES if getattr(lifetime, name) is not None]
        if not shown:
            return
        figures.lifetime = lifetime
        for name in shown:
            if getattr(figures, name) is None:
                figures.notes[name] = LIFETIME_NOTE

    def figures_by_model(self) -> dict[str, Figures]:
        """Figures per model_name when the server serves several models (else empty)."""
        if self.inconsistent or self._backend is None or not self._entries or len(self.models) < 2:
            return {}
        delta, last = self._delta(), self._entries[-1].page
        result = {}
        for model in last.models:
            model_delta = delta_of_model(delta, model) if delta is not None else None
            page = PageSnapshot(counters={}, gauges=last.model_gauges.get(model, {}), models=(model,))
            result[model] = self._qualified(self._backend.derive(model_delta, page))
        return result


def figures_between(
    first: Scrape, last: Scrape, backend: str | None = None, *, memo: SeriesMemo | None = None
) -> Figures:
    """Figures from two scrapes (e.g. before and after an A/B run); gauges from `last`."""
    if not last.up:
        return Figures()
    name = backend or last.backend or first.backend
    window = ScrapeWindow(window_s=math.inf, max_scrapes=2, backend=name, memo=memo)
    window.add(first)
    window.add(last)
    return window.figures()
