"""Figures no server can print: a garbled or mutated line must not reach the screen as a value.

Acceptance (and each per-position rate) lies in [0, 1], so do KV-cache usage and prefix-cache hit
rate; a mean acceptance length counts the bonus token, so it is at least 1; rates, counts and
throughputs are never negative, and accepted tokens never exceed drafted ones. An event breaking
any of these is dropped by the parser and counted as unread (`LogParser.unread`), never shown.
"""

from __future__ import annotations

from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent

_STATS_FRACTIONS = ("kv_cache_usage", "prefix_cache_hit_rate")
_STATS_NON_NEGATIVE = (
    "prompt_tokens_per_s",
    "generation_tokens_per_s",
    "running",
    "waiting",
    "new_tokens",
    "cached_tokens",
)
_SPEC_NON_NEGATIVE = (
    "accepted_tokens",
    "drafted_tokens",
    "accepted_tokens_per_s",
    "drafted_tokens_per_s",
    "num_drafts",
)


def _fraction(value: float | None) -> bool:
    return value is None or 0.0 <= value <= 1.0


def plausible(event: StatsEvent | SpecDecodeEvent | ErrorEvent) -> bool:
    """False when the event holds a value no server prints (see the module doc)."""
    values = event.__dict__  # plain attribute reads: this runs for every figure-carrying line
    if isinstance(event, SpecDecodeEvent):
        if not _fraction(values["acceptance_rate"]):
            return False
        mean = values["mean_acceptance_length"]
        if mean is not None and mean < 1.0:
            return False
        positions = values["per_position_acceptance"]
        if positions and not all(0.0 <= rate <= 1.0 for rate in positions):
            return False
        for name in _SPEC_NON_NEGATIVE:
            value = values[name]
            if value is not None and value < 0:
                return False
        accepted, drafted = values["accepted_tokens"], values["drafted_tokens"]
        return accepted is None or drafted is None or accepted <= drafted
    if isinstance(event, StatsEvent):
        for name in _STATS_FRACTIONS:
            if not _fraction(values[name]):
                return False
        for name in _STATS_NON_NEGATIVE:
            value = values[name]
            if value is not None and value < 0:
                return False
    return True
