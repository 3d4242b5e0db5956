"""One cleaned line -> typed events, and `LogParser`, which groups a traceback into one event (vLLM repeats
the record's prefix on each of its lines: a prefixed line belongs when process, level and file:line match)."""

from __future__ import annotations

import logging
import re
from collections import deque

from tui.telemetry.events import ErrorCategory, ErrorEvent, LogEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import errors, fastpath, llamacpp, sglang, vllm
from tui.telemetry.logs.prefix import LinePrefix, clean_line, split_prefix

MAX_LINE_CHARS = 16384
BACKENDS = frozenset({"vllm", "sglang", "llamacpp"})

ParsedEvent = StatsEvent | SpecDecodeEvent | ErrorEvent
MAX_HEAD_LINES = 20

MAX_TAIL_LINES = 80
MAX_EXCEPTION_CONTINUATION_LINES = 20
MAX_MESSAGE_CHARS = 2000
# pydantic's exception line names only the model; what failed is on the indented line after it
# (vLLM 0.32: `ValidationError: 1 validation error for SpeculativeConfig` / `  Value error, Invalid
# repository ID or local directory specified: '/models/draft'.`), which would pass for a frame line.
_PYDANTIC_EXCEPTION = re.compile(r"ValidationError: \d+ validation errors? for \S+$")


class TracebackGroup:
    """The lines of one traceback seen so far; bounded whatever the input."""

    def __init__(self, line: str, prefix: LinePrefix, backend: str | None) -> None:
        self.time = prefix.time
        self.backend = prefix.backend or backend
        self._key = _record_key(prefix)
        self._head: list[str] = [line]
        self._tail: deque[str] = deque(maxlen=MAX_TAIL_LINES)
        self._omitted = 0
        self._in_exception = False
        self._continuation_lines = 0
        self._awaiting_detail = False
        self.exception: str | None = None
        self.reported_categories: set[str] = set()

    def belongs(self, prefix: LinePrefix) -> bool:
        """Whether a line with this prefix can be part of the traceback (by its prefix alone)."""
        return not prefix.has_prefix or (prefix.backend == "vllm" and _record_key(prefix) == self._key)

    def offer(self, line: str, prefix: LinePrefix) -> tuple[bool, str | None]:
        """Add the line if it continues the traceback. Returns (taken, exception text if it is one)."""
        message = prefix.message
        stripped = message.strip()
        if self._awaiting_detail and self.exception is not None and stripped and message[:1] in (" ", "\t"):
            self._awaiting_detail = False
            self.exception = f"{self.exception}: {stripped}"[:MAX_MESSAGE_CHARS]
            self._add(line)
            return True, None
        self._awaiting_detail = False
        if errors.is_frame_line(message) or not stripped:
            self._in_exception = self._in_exception and not errors.is_frame_line(message)
            self._add(line)
            return True, None
        if errors.TRACEBACK_START in message or stripped.startswith(errors.TRACEBACK_CONTINUATIONS):
            self._in_exception = False
            self._add(line)
            return True, None
        if not self._in_exception:
            self._in_exception = True
            self._continuation_lines = 0
            self.exception = stripped[:MAX_MESSAGE_CHARS]
            self._awaiting_detail = _PYDANTIC_EXCEPTION.search(stripped) is not None
            self._add(line)
            return True, self.exception
        # A multi-line exception message (e.g. SGLang's "Possible solutions:" list); `belongs` has
        # already turned away prefixed lines of other records.
        if self._continuation_lines >= MAX_EXCEPTION_CONTINUATION_LINES:
            return False, None
        self._continuation_lines += 1
        self._add(line)
        return True, None

    def event(self) -> ErrorEvent:
        lines = list(self._head)
        if self._omitted:
            lines.append(f"... {self._omitted} lines omitted ...")
        lines.extend(self._tail)
        return ErrorEvent(
            time=self.time,
            backend=self.backend,
            category="traceback",
            message=self.exception or errors.TRACEBACK_START,
            line="\n".join(lines),
        )

    def _add(self, line: str) -> None:
        if len(self._head) < MAX_HEAD_LINES:
            self._head.append(line)
            return
        if len(self._tail) == self._tail.maxlen:
            self._omitted += 1
        self._tail.append(line)


def _record_key(prefix: LinePrefix) -> tuple[str | None, str | None, str | None]:
    return (prefix.source, prefix.level, prefix.origin)


# Per event kind: the fields within 0..1, and the fields never negative.
_FRACTIONS = {"spec_decode": ("acceptance_rate",), "stats": ("kv_cache_usage", "prefix_cache_hit_rate")}
_SPEC_COUNTS = (
    "accepted_tokens",
    "drafted_tokens",
    "num_drafts",
    "accepted_tokens_per_s",
    "drafted_tokens_per_s",
)
_STATS_COUNTS = ("generation_tokens_per_s", "prompt_tokens_per_s", "running", "waiting")
_COUNTS = {"spec_decode": _SPEC_COUNTS, "stats": (*_STATS_COUNTS, "new_tokens", "cached_tokens")}


def plausible(event: StatsEvent | SpecDecodeEvent | ErrorEvent) -> bool:
    """False when the event holds a value no server prints (a garbled line): dropped, counted as unread."""
    values = event.__dict__
    kind = values["kind"]
    if kind == "error":
        return True
    if any(values[name] is not None and not 0.0 <= values[name] <= 1.0 for name in _FRACTIONS[kind]):
        return False
    if any(values[name] is not None and values[name] < 0 for name in _COUNTS[kind]):
        return False
    if kind != "spec_decode":
        return True
    mean, positions = values["mean_acceptance_length"], values["per_position_acceptance"]
    accepted, drafted = values["accepted_tokens"], values["drafted_tokens"]
    return not (
        (mean is not None and mean < 1.0)
        or (positions and (min(positions) < 0.0 or max(positions) > 1.0))
        or (accepted is not None and drafted is not None and accepted > drafted)
    )


def normalize_backend(backend: str | None) -> str | None:
    """A backend hint spectop can use ('auto', 'openai' and unknown names mean: detect)."""
    if backend is None:
        return None
    name = backend.strip().lower().replace(".", "").replace("-", "").replace("_", "")
    return name if name in BACKENDS else None


def prepare(raw: str) -> str:  # the cleaned, length-capped text of a raw line
    line = (raw if len(raw) <= MAX_LINE_CHARS else raw[:MAX_LINE_CHARS]).rstrip("\r\n")
    if "\x1b" in line or "\r" in line or "\n" in line:
        line = clean_line(line)
    return line


def grammar_events(line: str) -> list[ParsedEvent]:
    """Stats and spec_decode events of a cleaned line (empty when no grammar matches)."""
    if " batch" in line or "#running-req: " in line:  # SGLang first: its lines also say "throughput"
        fast = fastpath.sglang_batch(line)
        if fast is not None:
            return fast
        found = sglang.find_batch(line)
        if found is not None:
            return sglang.parse_batch(line, found)
    if "throughput" in line and (start := line.find(vllm.STATS_MARKER)) >= 0:
        return _listed(fastpath.vllm_stats(line) or vllm.parse_stats(line, start))
    if "metrics: " in line:
        for marker in vllm.SPEC_MARKERS:
            if (start := line.find(marker)) >= 0:
                return _listed(fastpath.vllm_spec(line) or vllm.parse_spec(line, start, marker))
    if "acc" in line:
        if (start := line.find(llamacpp.ACCEPTANCE_MARKER)) >= 0:
            return _listed(llamacpp.parse_acceptance(line, start))
        if (start := line.find(llamacpp.PER_POSITION_MARKER)) >= 0:
            return _listed(llamacpp.parse_per_position(line, start))
        if llamacpp.STATISTICS_MARKER in line:
            return _listed(llamacpp.parse_statistics(line))
    if "Prefix cache hit rate: GPU: " in line:
        return _listed(vllm.parse_v0_prefix_hit(line, line.find(vllm.V0_PREFIX_HIT_MARKER)))
    return []


def _listed(event: ParsedEvent | None) -> list[ParsedEvent]:
    return [event] if event is not None else []


def error_of(prefix: LinePrefix, category: ErrorCategory, line: str, backend: str | None) -> ErrorEvent:
    return ErrorEvent(
        time=prefix.time,
        uptime=prefix.uptime,
        backend=prefix.backend or backend,
        category=category,
        message=prefix.message.strip()[:MAX_MESSAGE_CHARS],
        line=line,
    )


def parse_events(raw: str, backend: str | None = None) -> list[ParsedEvent]:
    """Every plausible event of one line (a SGLang Decode line with spec fields: stats AND spec_decode)."""
    line = prepare(raw)
    events = grammar_events(line)
    if events:
        return [event for event in events if plausible(event)]
    if errors.has_quiet_level(line) or not errors.passes_gate(line):
        return []
    prefix = split_prefix(line)
    category = errors.classify(prefix.message, prefix.level)
    return [] if category is None else [error_of(prefix, category, line, normalize_backend(backend))]


def parse_line(line: str, backend: str | None = None) -> ParsedEvent | None:
    """The first event of one log line, or None (a SGLang Decode line's stats; `parse_events` has both)."""
    events = parse_events(line, backend)
    return events[0] if events else None


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
        """`feed`, but a line the parser raised on (a grammar bug) gives no events and is counted."""
        try:
            return self.feed(line)
        except Exception as error:
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
        """The events the line completes. A grammar bug raises here (tests see it)."""
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
            return events + found
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
