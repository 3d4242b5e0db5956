"""Figures no server can print: a garbled or mutated line must not reach the screen as a value.

Acceptance (and each per-position rate) lies in [0, 1], so do KV-cache usage and prefix-cache hit
rate; a mean acceptance length counts the bonus token, so it is at least 1; rates, counts and
throughputs are never negative, and accepted tokens never exceed drafted ones. An event breaking
any of these is dropped by the parser and counted as unread (`LogParser.unread`), never shown.
"""

from __future__ import annotations

from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent

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
    """False when the event holds a value no server prints (see the module doc)."""
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
