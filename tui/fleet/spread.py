"""Per group of the fleet: imbalance (how far apart its replicas, or one vLLM's
engines, are). A member is far off when more than `rel` of the median AND more than `abs_` away, judged
with at least three known members (with two, neither is the odd one); unknown values take no part."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from tui.fleet.poller import FleetReading
from tui.format import FIGURES, fmt_rate_delta
from tui.telemetry.alerts import Alert
from tui.telemetry.figures import Figures

# figure -> (relative, absolute) distance from the median that counts as far off
DEFAULT_LIMITS: dict[str, tuple[float, float]] = {
    "acceptance_rate": (0.2, 0.1),
    "generation_tokens_per_s": (0.5, 1.0),
}
MIN_MEMBERS = 3


@dataclass(frozen=True, slots=True)
class Outlier:
    member: str  # an instance, or "instance engine=N"
    value: float
    deviation: float  # (value - median) / median; -0.5 = half the median


@dataclass(frozen=True, slots=True)
class Spread:
    group: str  # the group's label value, or the instance for engines
    figure: str
    members: int  # members with a known value
    median: float
    outliers: tuple[Outlier, ...]


def spread_of(
    group: str, figure: str, values: dict[str, float | None], limits: tuple[float, float]
) -> Spread | None:
    """The spread of one figure over named members; None without a known value."""
    known = {member: value for member, value in values.items() if value is not None}
    if not known:
        return None
    median = statistics.median(known.values())
    rel, abs_ = limits
    outliers: list[Outlier] = []
    if len(known) >= MIN_MEMBERS:
        for member, value in sorted(known.items()):
            distance = abs(value - median)
            if distance > abs_ and distance > rel * abs(median):
                deviation = (value - median) / median if median else float("inf")
                outliers.append(Outlier(member, value, deviation))
    return Spread(group, figure, len(known), median, tuple(outliers))


# The last readings `group_spreads` was asked of (kept, so that their ids are not reused) and its answer: a
# refresh's readings are asked twice (the source's imbalance check, the fleet table's rows), and readings do
# not change once a refresh returned them.
_last_spreads: list[tuple[tuple[FleetReading, ...], set[int], list[Spread]]] = []


def group_spreads(readings: Iterable[FleetReading]) -> list[Spread]:
    """Spread of acceptance and tokens/s across the up instances of each group (group_by label)."""
    kept = tuple(readings)
    ids = {id(reading) for reading in kept}
    if _last_spreads and len(_last_spreads[0][0]) == len(kept) and _last_spreads[0][1] == ids:
        return list(_last_spreads[0][2])
    groups: dict[str, list[FleetReading]] = {}
    for reading in kept:
        if reading.up:
            groups.setdefault(reading.group or "", []).append(reading)
    spreads = [
        spread
        for group, members in sorted(groups.items())
        for spread in _spreads(group, {reading.instance: reading.figures for reading in members})
    ]
    _last_spreads[:] = [(kept, ids, spreads)]
    return list(spreads)


def _spreads(group: str, members: dict[str, Figures]) -> list[Spread]:
    """The spread of each figure of DEFAULT_LIMITS over the members' figures (a figure none knows: none)."""
    spreads = (
        spread_of(group, figure, {name: getattr(values, figure) for name, values in members.items()}, limits)
        for figure, limits in DEFAULT_LIMITS.items()
    )
    return [spread for spread in spreads if spread is not None]


def engine_spreads(reading: FleetReading) -> list[Spread]:
    """Spread across the `engine` labels (data-parallel ranks) of one vLLM instance."""
    engines = {f"{reading.instance} engine={engine}": figures for engine, figures in reading.engines.items()}
    return _spreads(reading.instance, engines)


def imbalance_text(spread: Spread, outlier: Outlier) -> str:
    """ "acceptance 32% vs median 69% of 50 in model-1 (-54%)", in `tui.format.FIGURES`' words."""
    word = FIGURES[spread.figure]
    return (
        f"{word.label} {word.format(outlier.value)} vs median {word.format(spread.median)} of "
        f"{spread.members} in {spread.group or 'the fleet'} ({fmt_rate_delta(outlier.deviation)})"
    )


@dataclass
class ImbalanceAlerts:
    """Alerts for members that stay far off their group for `sustained_s` seconds."""

    sustained_s: float = 30.0
    _since: dict[tuple[str, str], float] = field(default_factory=dict)
    _active: dict[tuple[str, str], Alert] = field(default_factory=dict)

    def active(self) -> list[Alert]:
        return sorted(self._active.values(), key=lambda alert: alert.started_at)

    def observe(self, time: float, spreads: Iterable[Spread]) -> list[Alert]:
        """Apply one refresh's spreads; returns the alerts that started or cleared."""
        changed: list[Alert] = []
        seen: set[tuple[str, str]] = set()
        for spread in spreads:
            for outlier in spread.outliers:
                key = (outlier.member, spread.figure)
                seen.add(key)
                since = self._since.setdefault(key, time)
                active = self._active.get(key)
                if active is not None:  # its text follows the figures, refresh after refresh
                    active.message = imbalance_text(spread, outlier)
                elif time - since >= self.sustained_s:
                    text = imbalance_text(spread, outlier)
                    alert = self._active[key] = Alert(outlier.member, "imbalance", "warning", text, since)
                    changed.append(alert)
        for key in [key for key in self._since if key not in seen]:
            del self._since[key]
            cleared = self._active.pop(key, None)
            if cleared is not None:
                cleared.cleared_at = time
                changed.append(cleared)
        return changed
