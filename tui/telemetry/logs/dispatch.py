"""One cleaned line -> typed events. Most lines are noise, so every grammar is gated by a plain
substring test before any regex runs."""

from __future__ import annotations

from tui.telemetry.events import ErrorCategory, ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import errors, fastpath, llamacpp, sglang, vllm
from tui.telemetry.logs.prefix import LinePrefix, clean_line, split_prefix

MAX_LINE_CHARS = 16384
MAX_MESSAGE_CHARS = 2000
BACKENDS = frozenset({"vllm", "sglang", "llamacpp"})

ParsedEvent = StatsEvent | SpecDecodeEvent | ErrorEvent


_SPEC_COUNTS: tuple[str, ...] = ("accepted_tokens_per_s", "drafted_tokens_per_s", "num_drafts")
_STATS_COUNTS = (
    "generation_tokens_per_s",
    "prompt_tokens_per_s",
    "running",
    "waiting",
    "new_tokens",
    "cached_tokens",
)


def plausible(event: StatsEvent | SpecDecodeEvent | ErrorEvent) -> bool:
    """False when the event holds a value no server prints (a garbled line): dropped and counted as
    unread (`LogParser.unread`), never shown."""
    values = event.__dict__  # plain reads, no calls: this runs for every figure-carrying line
    kind = values["kind"]
    if kind == "spec_decode":
        rate = values["acceptance_rate"]
        if rate is not None and not 0.0 <= rate <= 1.0:
            return False
        mean = values["mean_acceptance_length"]
        if mean is not None and mean < 1.0:
            return False
        positions = values["per_position_acceptance"]
        if positions and (min(positions) < 0.0 or max(positions) > 1.0):
            return False
        accepted, drafted = values["accepted_tokens"], values["drafted_tokens"]
        if accepted is not None and (accepted < 0 or (drafted is not None and accepted > drafted)):
            return False
        if drafted is not None and drafted < 0:
            return False
        names = _SPEC_COUNTS
    elif kind == "stats":
        usage, hit = values["kv_cache_usage"], values["prefix_cache_hit_rate"]
        if (usage is not None and not 0.0 <= usage <= 1.0) or (hit is not None and not 0.0 <= hit <= 1.0):
            return False
        names = _STATS_COUNTS
    else:
        return True
    for name in names:  # never negative
        value = values[name]
        if value is not None and value < 0:
            return False
    return True


def normalize_backend(backend: str | None) -> str | None:
    """A backend hint spectop can use ('auto', 'openai' and unknown names mean: detect)."""
    if backend is None:
        return None
    name = backend.strip().lower().replace(".", "").replace("-", "").replace("_", "")
    return name if name in BACKENDS else None


def prepare(raw: str) -> str:
    """The cleaned, length-capped text of a raw line."""
    # The line ending (and vLLM's continuation `\r`) goes in one C call; the general cleaner runs
    # only for lines that still hold colour codes or carriage returns.
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


def error_event(line: str, backend: str | None) -> ErrorEvent | None:
    """The error event of a cleaned line, or None."""
    if errors.has_quiet_level(line) or not errors.passes_gate(line):
        return None
    prefix = split_prefix(line)
    category = errors.classify(prefix.message, prefix.level)
    return None if category is None else error_of(prefix, category, line, backend)


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
    """Every event of one line (a SGLang Decode line with spec fields: stats AND spec_decode), impossible
    ones left out (`plausible`). A grammar bug raises: `LogParser.feed_guarded` counts it."""
    line = prepare(raw)
    events = grammar_events(line)
    if events:
        return [event for event in events if plausible(event)]
    error = error_event(line, normalize_backend(backend))
    return [error] if error is not None else []


def parse_line(line: str, backend: str | None = None) -> ParsedEvent | None:
    """The first event of one log line, or None (a SGLang Decode line's stats; `parse_events` has both)."""
    events = parse_events(line, backend)
    return events[0] if events else None
