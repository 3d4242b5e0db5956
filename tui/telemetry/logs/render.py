"""Events as text: one JSON object per event (`spectop logs --json`), or one readable line (≤ 80 columns)."""

from __future__ import annotations

from collections.abc import Callable

from tui.format import UNKNOWN, fmt_count, fmt_length, fmt_rate, fmt_tokens_per_s
from tui.sanitize import json_safe, safe_line
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent

_NO_LINE: set[str] = {"line"}  # pydantic takes a set (or a mapping) of field names
LINE_WIDTH = 80
_STATS_PARTS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("generation_tokens_per_s", "gen {}/s", fmt_tokens_per_s),
    ("prompt_tokens_per_s", "prompt {}/s", fmt_tokens_per_s),
    ("running", "run {}", fmt_count),
    ("waiting", "wait {}", fmt_count),
    ("kv_cache_usage", "kv {}", fmt_rate),
    ("prefix_cache_hit_rate", "hit {}", fmt_rate),
)


def event_json(event: StatsEvent | SpecDecodeEvent | ErrorEvent) -> str:
    """`{"kind", "time", ...known fields}` as one JSON line; the raw `line` only for errors (tracebacks)."""
    exclude = None if isinstance(event, ErrorEvent) else _NO_LINE
    text = event.model_dump_json(exclude_none=True, exclude=exclude)
    if event.time is not None:
        return json_safe(text)
    head = f'{{"kind":"{event.kind}"'  # `kind` is every event's first field; `time` goes right after it
    return json_safe(head + ',"time":null' + text[len(head) :])


def event_text(event: StatsEvent | SpecDecodeEvent | ErrorEvent, width: int = LINE_WIDTH) -> str:
    """One readable line: time, kind, the figures that are known."""
    time = event.time or UNKNOWN
    if isinstance(event, StatsEvent):
        body = _stats_text(event)
    elif isinstance(event, SpecDecodeEvent):
        body = _spec_text(event)
    else:
        body = f"ERROR {event.category}: {event.message.splitlines()[0] if event.message else ''}"
    if (uptime := getattr(event, "uptime", None)) is not None:  # llama.cpp's time since start, apart
        body += f"  (up {uptime})"
    text = safe_line(f"{time:<14} {body}")
    return text if len(text) <= width else text[: width - 1] + "…"


def _stats_text(event: StatsEvent) -> str:
    parts = [f"{event.phase or 'stats':<5}"]
    for name, text, fmt in _STATS_PARTS:
        if (value := getattr(event, name)) is not None:
            parts.append(text.format(fmt(value)))
    return " ".join(parts)


def _spec_text(event: SpecDecodeEvent) -> str:
    parts = ["spec "]
    if event.acceptance_rate is not None:
        parts.append(f"accept {fmt_rate(event.acceptance_rate)}")
    if event.mean_acceptance_length is not None:
        parts.append(f"len {fmt_length(event.mean_acceptance_length)}")
    if event.accepted_tokens is not None and event.drafted_tokens is not None:
        parts.append(f"{event.accepted_tokens}/{event.drafted_tokens} tok")
    if event.per_position_acceptance:
        parts.append("pos " + " ".join(fmt_rate(rate) for rate in event.per_position_acceptance))
    if event.scope == "lifetime":
        parts.append("(lifetime)")
    return " ".join(parts)
