"""`LogParser`: the stateful line-by-line parser a tailer feeds; it remembers the backend and groups a
traceback into one event, reporting a specific failure (OOM, dead engine, spec config) at once."""

from __future__ import annotations

import logging

from tui.telemetry.events import ErrorEvent, LogEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import errors
from tui.telemetry.logs.dispatch import (
    MAX_MESSAGE_CHARS,
    ParsedEvent,
    error_of,
    grammar_events,
    normalize_backend,
    plausible,
    prepare,
)
from tui.telemetry.logs.prefix import LinePrefix, split_prefix
from tui.telemetry.logs.tracebacks import TracebackGroup

log = logging.getLogger(__name__)

_SPECIFIC = frozenset({"oom", "engine_dead", "spec_config"})


class LogParser:
    """Feed it lines in order; it returns the events each line completes."""

    def __init__(self, backend: str | None = None) -> None:
        self.backend: str | None = normalize_backend(backend)
        self._group: TracebackGroup | None = None
        self._last_stats: StatsEvent | None = None  # vLLM: the stats line a SpecDecoding line follows
        self.unread = 0  # events dropped for an impossible value (garbled lines); see `plausible`
        self.failed_lines = 0  # lines `feed_guarded` could not read (the parser raised: a bug)
        self.last_failure: str | None = None  # the last of those errors, "TypeName: message"

    @property
    def pending(self) -> bool:
        """True while a traceback is open (its event comes with a later line or `flush()`)."""
        return self._group is not None

    def feed_guarded(self, line: str) -> list[LogEvent]:
        """`feed` for a line from a file, the one safety net: a line the parser raised on (a grammar bug)
        gives no events and is counted in `failed_lines` (shown, never silent)."""
        try:
            return self.feed(line)
        except Exception as error:  # a grammar bug: counted and shown, the traceback in the debug log
            log.exception("a %s log line could not be parsed", self.backend or "server")
            self._group = None
            self.failed_lines += 1
            self.last_failure = f"{type(error).__name__}: {error}"[:MAX_MESSAGE_CHARS]
            return []

    def flush(self) -> list[LogEvent]:
        """Events still held back (an open traceback); call at end of file or when the log goes quiet."""
        group, self._group = self._group, None
        return [group.event()] if group is not None else []

    def feed(self, raw: str) -> list[LogEvent]:
        """The events the line completes. A grammar bug raises here (tests see it); see `feed_guarded`."""
        line = prepare(raw)
        events: list[LogEvent] = []
        found = grammar_events(line)
        for event in found:
            if not plausible(event):
                return self._drop_implausible(found)
        if self._group is not None:
            if not found:
                prefix = split_prefix(line)
                if self._group.belongs(prefix):
                    taken, exception = self._group.offer(line, prefix)
                    if taken:
                        return self._exception_events(exception, prefix, line)
            events.extend(self.flush())
        if found:
            first = found[0]
            if self.backend is None:
                self.backend = first.backend
            if first.backend == "vllm":
                self._attribute_engine(first)
            if events:
                events.extend(found)
                return events
            return found
        if errors.has_quiet_level(line) or not errors.passes_gate(line):
            return events
        prefix = split_prefix(line)
        if errors.TRACEBACK_START in prefix.message and prefix.level not in ("DEBUG", "INFO", "WARNING"):
            self._group = TracebackGroup(line, prefix, self.backend)
        category = errors.classify(prefix.message, prefix.level)
        if category is not None and (self._group is None or category in _SPECIFIC):
            if self.backend is None:
                self.backend = prefix.backend
            events.append(error_of(prefix, category, line, self.backend))
            if self._group is not None:
                self._group.reported_categories.add(category)
        return events

    def _drop_implausible(self, found: list[ParsedEvent]) -> list[LogEvent]:
        """A figure line with an impossible value: its bad events are counted as unread, never returned."""
        kept = [event for event in found if plausible(event)]
        self.unread += len(found) - len(kept)
        events = self.flush()  # the line still ends an open traceback
        for event in kept:
            if event.backend == "vllm":
                self._attribute_engine(event)
        return events + kept

    def _attribute_engine(self, event: ParsedEvent) -> None:
        """vLLM prints `Engine 002: Avg prompt throughput ...` and then, from the same logger call, a
        SpecDecoding line without the engine: give it the engine of the stats line just before it."""
        if isinstance(event, StatsEvent):
            self._last_stats = event
            return
        last, self._last_stats = self._last_stats, None
        if (
            isinstance(event, SpecDecodeEvent)
            and event.engine is None
            and last is not None
            and last.engine is not None
            and last.time == event.time
        ):
            event.engine = last.engine

    def _exception_events(self, exception: str | None, prefix: LinePrefix, line: str) -> list[LogEvent]:
        group = self._group
        if exception is None or group is None:
            return []
        category = errors.classify(exception, None)
        if category not in _SPECIFIC or category in group.reported_categories:
            return []
        group.reported_categories.add(category)
        return [
            ErrorEvent(
                time=prefix.time or group.time,
                uptime=prefix.uptime,
                backend=prefix.backend or group.backend,
                category=category,
                message=exception,
                line=line,
            )
        ]
