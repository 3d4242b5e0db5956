"""vLLM log grammar: the periodic stats line and the speculative-decoding line, V0 and V1 in every known
variant (vllm.md §2.2, §2.3), keyed on message text only (file:line drifts between builds)."""

from __future__ import annotations

from tui.telemetry.events import SpecDecodeEvent, StatsEvent
from tui.telemetry.logs.prefix import (
    parse_count,
    parse_field_value,
    parse_float_list,
    parse_number,
    split_prefix,
)

STATS_MARKER = "Avg prompt throughput: "
V0_PREFIX_HIT_MARKER = "Prefix cache hit rate: GPU: "
SPEC_MARKERS = ("SpecDecoding metrics: ", "Speculative metrics: ")

_STATS_FIELDS = {
    "Avg prompt throughput": "prompt_tokens_per_s",
    "Avg generation throughput": "generation_tokens_per_s",
    "Running": "running",
    "Waiting": "waiting",
    "Pending": "waiting",  # V0: requests not yet scheduled
    "GPU KV cache usage": "kv_cache_usage",
    "KV cache usage": "kv_cache_usage",  # spelled without "GPU" by some builds and platform forks
    "Prefix cache hit rate": "prefix_cache_hit_rate",
    "GPU prefix cache hit rate": "prefix_cache_hit_rate",
}
_SPEC_FIELDS = {
    "Mean acceptance length": ("mean_acceptance_length", parse_number),
    "Avg Draft acceptance rate": ("acceptance_rate", parse_number),
    "Draft acceptance rate": ("acceptance_rate", parse_number),
    "Accepted": ("accepted_tokens", parse_count),
    "Number of accepted tokens": ("accepted_tokens", parse_count),
    "Drafted": ("drafted_tokens", parse_count),
    "Number of draft tokens": ("drafted_tokens", parse_count),
    "Accepted throughput": ("accepted_tokens_per_s", parse_number),
    "Drafted throughput": ("drafted_tokens_per_s", parse_number),
}
_LIFETIME_KEYS = ("Number of emitted tokens", "System efficiency")
_DEVICE_KV = " KV cache usage"


def parse_stats(line: str, start: int) -> StatsEvent | None:
    """The stats line whose `Avg prompt throughput` segment begins at `start`."""
    prefix = split_prefix(line[:start])
    values: dict[str, float | None] = {}
    extra: dict[str, bool | int | float | str] = {}
    body = line[start:].rstrip().rstrip(".,").rstrip()
    for item in body.split(", "):
        key, separator, raw_value = item.partition(": ")
        if not separator:
            continue
        field = _STATS_FIELDS.get(key)
        if field is None and key.endswith(_DEVICE_KV) and "kv_cache_usage" not in values:
            # The V1 engine names its KV device: "CPU KV cache usage" on the CPU build. V0 printed
            # "GPU KV cache usage" first and then a CPU (swap) one, which stays an extra.
            field = "kv_cache_usage"
        if field is not None:
            values[field] = parse_number(raw_value)
        elif (value := parse_field_value(raw_value)) is not None:
            extra[key] = value
    if not values:
        return None
    engine = _engine_name(prefix.message)
    head = {"time": prefix.time, "backend": "vllm", "engine": engine, "extra": extra or None, "line": line}
    return StatsEvent.model_validate(head | values)


def parse_v0_prefix_hit(line: str, start: int) -> StatsEvent | None:
    """V0's separate `Prefix cache hit rate: GPU: 94.35%, CPU: 0.00%` line."""
    body = line[start + len(V0_PREFIX_HIT_MARKER) :]
    gpu, _, cpu = body.partition(", CPU: ")
    rate = parse_number(gpu)
    if rate is None:
        return None
    cpu_rate = parse_number(cpu) if cpu else None
    return StatsEvent(
        time=split_prefix(line[:start]).time,
        backend="vllm",
        prefix_cache_hit_rate=rate,
        extra={"CPU prefix cache hit rate": cpu_rate} if cpu_rate is not None else None,
        line=line,
    )


def parse_spec(line: str, start: int, marker: str) -> SpecDecodeEvent | None:
    """A `SpecDecoding metrics:` / `Speculative metrics:` line whose marker begins at `start`."""
    prefix = split_prefix(line[:start])
    body = line[start + len(marker) :].rstrip().rstrip(".,").rstrip()
    fields: dict[str, float | int | None] = {}
    lifetime = False
    old_format = False  # 2025-04-24 → 2025-09-11: "Draft acceptance rate" first, no throughputs
    for item in body.split(", "):
        key, separator, raw_value = item.partition(": ")
        if key in _SPEC_FIELDS and separator:  # no separator: a per-position value, read by _positions
            name, parse = _SPEC_FIELDS[key]
            fields[name] = parse(raw_value)
            if name == "acceptance_rate":
                old_format = key == "Draft acceptance rate"
        lifetime = lifetime or (key in _LIFETIME_KEYS and bool(separator))
    mean_length, rate = fields.get("mean_acceptance_length"), fields.get("acceptance_rate")
    accepted, drafted = fields.get("accepted_tokens"), fields.get("drafted_tokens")
    per_position = _positions(body)
    # Until #17908 (2025-05-09) the mean length excluded the bonus token: it then equals the
    # sum of the per-position rates instead of 1 + that sum. Only the format of that time can print
    # it so; in the current one (always with the bonus) a length below 1 is garbled, and dropped.
    if old_format and per_position and mean_length is not None:
        total = sum(per_position)
        if abs(mean_length - total) < abs(mean_length - (1.0 + total)):
            mean_length += 1.0
    if rate is None and accepted is not None and drafted:
        rate = accepted / drafted
    if mean_length is None and rate is None and accepted is None and drafted is None:
        return None
    return SpecDecodeEvent.model_validate(
        fields
        | {
            "time": prefix.time,
            "backend": "vllm",
            "mean_acceptance_length": mean_length,
            "acceptance_rate": rate,
            "per_position_acceptance": per_position or None,
            "scope": "lifetime" if lifetime else "interval",
            "engine": _engine_name(prefix.message),
            "line": line,
        }
    )


def _positions(body: str) -> list[float] | None:
    start = body.find("Per-position acceptance rate: ")
    if start < 0:
        return None
    text = body[start + len("Per-position acceptance rate: ") :]
    end = text.find(": ")
    if end >= 0:  # another `Key: value` segment follows the list; cut at its comma
        text = text[: text.rfind(", ", 0, end)]
    return parse_float_list(text)


def _engine_name(message_head: str) -> str | None:
    """`Engine 002: ` -> '2'; `3 Engines Aggregated: ` -> 'aggregated'."""
    head = message_head.rstrip().rstrip(":")
    if head.endswith(" Engines Aggregated"):
        return "aggregated"
    _, found, number = head.rpartition("Engine ")
    return str(int(number)) if found and number.isdigit() else None
