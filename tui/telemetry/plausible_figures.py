"""Derived figures no server can have (a bad page: accepted > drafted, KV cache above 1, a negative queue):
dropped with a note saying what and why, never shown; the log parser's rules (`logs.dispatch.plausible`)."""

from __future__ import annotations

import math

from tui.format import FIGURES, fmt_count
from tui.telemetry.figures import FIGURE_NAMES, Figures

DROPPED_NOTE = "impossible value dropped"  # how a dropped figure's note begins
_UNIT_INTERVAL = ("acceptance_rate", "kv_cache_usage", "prefix_cache_hit_rate")
_NON_NEGATIVE = tuple(
    name
    for name in FIGURE_NAMES
    if name not in (*_UNIT_INTERVAL, "mean_acceptance_length", "per_position_acceptance")
)


def _shown(name: str, value: float) -> str:
    return FIGURES[name].format(value) if math.isfinite(value) else str(value)


def _impossible(figures: Figures) -> dict[str, str]:
    """Each impossible figure of `figures` and why (a comparison with NaN is false: NaN is never possible)."""
    found: dict[str, str] = {}
    acceptance = figures.acceptance_rate
    if acceptance is not None and not 0.0 <= acceptance <= 1.0:
        above = math.isfinite(acceptance) and acceptance > 1
        what = "accepted > drafted tokens" if above else "outside 0-100%"
        found["acceptance_rate"] = f"{_shown('acceptance_rate', acceptance)}: {what}"
    positions = figures.per_position_acceptance
    if positions and not all(0.0 <= rate <= 1.0 for rate in positions):
        found["per_position_acceptance"] = "a position outside 0-100%"
    length = figures.mean_acceptance_length
    most = 1.0 + len(positions) if positions else math.inf  # the draft positions tell k, even when wrong
    if length is not None and not (1.0 <= length <= most + 1e-9 and length < math.inf):
        bound = f"more than 1 + k = {_shown('mean_acceptance_length', most)}" if length > 1 else "below 1"
        found["mean_acceptance_length"] = f"{_shown('mean_acceptance_length', length)}: {bound}"
    for name in _UNIT_INTERVAL[1:]:
        value = getattr(figures, name)
        if value is not None and not 0.0 <= value <= 1.0:
            found[name] = f"{_shown(name, value)}: outside 0-100%"
    for name in _NON_NEGATIVE:
        value = getattr(figures, name)
        if value is not None and not 0.0 <= value < math.inf:
            found[name] = f"{_shown(name, value)}: negative" if math.isfinite(value) else f"{value}"
    return found


def drop_impossible(figures: Figures) -> int:
    """Drop every impossible figure of `figures` (in place), each with a note; how many were dropped."""
    found = _impossible(figures)
    for name, why in found.items():
        setattr(figures, name, None)
        figures.notes[name] = f"{DROPPED_NOTE} ({why}): the page is inconsistent"
    return len(found)


def dropped_words(count: int) -> str:
    noun = "figure" if count == 1 else "figures"
    return f"{fmt_count(count)} impossible {noun} dropped (inconsistent page)"


def dropped_now(figures: Figures) -> bool:
    return any(note.startswith(DROPPED_NOTE) for note in figures.notes.values())
