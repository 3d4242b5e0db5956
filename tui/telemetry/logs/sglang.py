"""SGLang log grammar: `Prefill batch` / `Decode batch` lines in every version (sglang.md §2.2, §2.3).
Find the head, split on `", "`, each item at its last `": "`; fields spectop has no name for go to `extra`."""

from __future__ import annotations

from tui.telemetry.events import LogEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs.prefix import parse_count, parse_field_value, parse_number, split_prefix

DECODE_MARKER = "Decode batch"
PREFILL_MARKER = "Prefill batch"
LEGACY_MARKER = "#running-req: "

_STATS_FIELDS = {
    "#running-req": "running",
    "#queue-req": "waiting",
    "token usage": "kv_cache_usage",
    "full token usage": "kv_cache_usage",
    "gen throughput (token/s)": "generation_tokens_per_s",
    "input throughput (token/s)": "prompt_tokens_per_s",
    "cache hit rate": "prefix_cache_hit_rate",
}
_COUNT_FIELDS = {"#new-token": "new_tokens", "#cached-token": "cached_tokens"}
_SPEC_FIELDS = {"accept len": "mean_acceptance_length", "accept rate": "acceptance_rate"}


def find_batch(line: str) -> tuple[str, int, int] | None:
    """(phase, where the prefix ends, where the fields begin), or None when this is no batch line."""
    for phase, marker in (("decode", DECODE_MARKER), ("prefill", PREFILL_MARKER)):
        start = line.find(marker)
        if start < 0:
            continue
        position = start + len(marker)
        if line.startswith(" [", position):  # SGLANG_LOG_FORWARD_ITERS: `Decode batch [123],`
            close = line.find("]", position)
            if close < 0 or not line[position + 2 : close].isdigit():
                return None
            position = close + 1
        if line[position : position + 2] not in (", ", ". "):
            return None
        return phase, start, position + 2
    start = line.find(LEGACY_MARKER)
    if start >= 0 and "gen throughput" in line:  # ≤ 2024-07: `[gpu_id=0] #running-req: ...`
        return "decode", start, start
    return None


def parse_batch(line: str, found: tuple[str, int, int]) -> list[LogEvent]:
    """The stats event of a batch line, plus a spec_decode event when it carries `accept len/rate`."""
    phase, head_end, body_start = found
    prefix = split_prefix(line[:head_end])
    values: dict[str, float | None] = {}
    counts: dict[str, int | None] = {}
    spec: dict[str, float | None] = {}
    extra: dict[str, bool | int | float | str] = {}
    for item in line[body_start:].rstrip().rstrip(",").rstrip().split(", "):
        key, separator, raw_value = item.rpartition(": ")
        if not separator:
            continue
        field = _STATS_FIELDS.get(key)
        if field is not None:
            if values.get(field) is None:
                values[field] = parse_number(raw_value)
        elif key == "#new-token" or (key == "#cached-token" and phase == "prefill"):
            # Prefix hits of the batch. A decode line's `#cached-token` (an unreleased variant) is
            # another quantity: it stays in `extra`.
            counts[_COUNT_FIELDS[key]] = parse_count(raw_value)
        elif key in _SPEC_FIELDS:
            spec[_SPEC_FIELDS[key]] = parse_number(raw_value)
        elif (value := parse_field_value(raw_value)) is not None:
            extra[key] = value
    new_tokens, cached_tokens = counts.get("new_tokens"), counts.get("cached_tokens")
    if not values and new_tokens is None:
        return []
    if (
        phase == "prefill"
        and values.get("prefix_cache_hit_rate") is None
        and new_tokens is not None
        and cached_tokens is not None
        and new_tokens + cached_tokens > 0
    ):
        # This batch's hit rate (the same figure as the `sglang:cache_hit_rate` gauge after a prefill).
        values["prefix_cache_hit_rate"] = cached_tokens / (new_tokens + cached_tokens)
    time, engine = prefix.time, prefix.source
    stats = {"time": time, "backend": "sglang", "engine": engine, "phase": phase, "extra": extra or None}
    events: list[LogEvent] = [StatsEvent.model_validate({**stats, "line": line, **counts, **values})]
    spec_event = spec_of(line, time, engine, spec.get("mean_acceptance_length"), spec.get("acceptance_rate"))
    return events if spec_event is None else [*events, spec_event]


def spec_of(
    line: str, time: str | None, engine: str | None, length: float | None, rate: float | None
) -> SpecDecodeEvent | None:
    """The spec_decode event of a batch line with `accept len` / `accept rate`. The rate as a fraction:
    b6fb5d766 (2025-10-13) printed accept len / num_steps (sglang.md §5.1), above 1 up to min(2, accept len):
    no fraction, so unknown (the line's accept len is still good). Anything higher is impossible and left
    for the plausibility check to drop."""
    if rate is not None and 1.0 < rate <= min(2.0, length if length is not None else 2.0):
        rate = None
    if length is None and rate is None:
        return None
    return SpecDecodeEvent(
        time=time,
        backend="sglang",
        mean_acceptance_length=length,
        acceptance_rate=rate,
        scope="interval",
        engine=engine,
        line=line,
    )
