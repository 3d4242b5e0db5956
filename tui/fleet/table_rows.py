"""The fleet table as plain data: per group its summary row (`summary_figures`), then its instances by
the sort column; `off` marks how far an instance is off its group. `FleetRow` is the dashboard's
`EndpointRow` with the fleet's extras, sorted by the same `sorted_rows`."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.fleet.poller import FleetReading
from tui.fleet.spread import Spread, engine_spreads, group_spreads
from tui.format import fmt_rate_delta
from tui.telemetry.endpoint_row import EndpointRow, SortColumn, row_fields, sorted_rows
from tui.telemetry.reading import EndpointReading

GROUP_KEY_PREFIX = "\x00group:"  # row keys of summary rows (an instance name never starts so)
SHORT_FIGURE = {"acceptance_rate": "acc", "generation_tokens_per_s": "tok"}


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetRow(EndpointRow):
    """An instance's row (up, down, stale, no data, waiting) or a group's summary row ("3/4 up")."""

    key: str  # the instance (the board's endpoint name), or GROUP_KEY_PREFIX + group
    group: str
    summary: bool = False
    off: str = ""  # the spread / imbalance marker
    off_far: bool = False  # the marker names an outlier (shown as a warning)
    up: int = 0  # a group's: members up
    members: int = 0  # a group's: members shown


@dataclass(frozen=True, slots=True)
class Instance:
    """What the table knows of one endpoint: its latest reading, card status and active alerts."""

    name: str
    reading: EndpointReading | None
    status: str  # the card's status (up, down, stale, waiting, restarting)
    alert_severities: tuple[str, ...] = ()


def fleet_status(reading: EndpointReading | None, card_status: str) -> str:
    """The card's status, saying why an instance is not up: Prometheus failed, or the target is stale."""
    if reading is None or reading.up:
        return card_status
    if reading.source_failed:  # Prometheus failed: nothing known of the instance
        return "no data"
    if (reading.error or "").startswith("stale"):
        return "stale"
    return card_status


def group_of(reading: EndpointReading | None) -> str:
    return (reading.group if isinstance(reading, FleetReading) else None) or ""


def markers(spreads: Sequence[Spread]) -> dict[str, str]:
    """Each outlier's `off` marker (`acc-35%`), the first spread naming it winning (acceptance before
    tokens/s, the order of DEFAULT_LIMITS): once per group, not per instance and spread."""
    found: dict[str, str] = {}
    for spread in spreads:
        short = SHORT_FIGURE.get(spread.figure, spread.figure)
        for outlier in spread.outliers:
            found.setdefault(outlier.member, f"{short}{fmt_rate_delta(outlier.deviation)}")
    return found


def instance_row(instance: Instance, marked: Mapping[str, str]) -> FleetRow:
    """An instance's row; `marked`: the `off` markers of its group (`markers`)."""
    reading = instance.reading
    off = marked.get(instance.name, "")
    if not off and isinstance(reading, FleetReading) and reading.up and reading.engines:
        far = next((spread for spread in engine_spreads(reading) if spread.outliers), None)
        if far is not None:
            engine = far.outliers[0].member.rpartition("engine=")[2]
            off = f"eng{engine} {SHORT_FIGURE.get(far.figure, '')}".strip()
    status, severities = fleet_status(reading, instance.status), instance.alert_severities
    shared = row_fields(instance.name, reading, status=status, alert_severities=severities)
    return FleetRow(**shared, key=instance.name, group=group_of(reading), off=off, off_far=bool(off))


def summary_figures(readings: Sequence[FleetReading]) -> dict[str, Any]:
    """A group's summary row figures, of its up instances: tok/s, running and waiting summed, acceptance and
    mean length the replicas' median, the worst TTFT p95 (with its bucket), the fullest KV cache. Unknown
    (None) values take no part; a figure no member knows stays None."""
    live = [reading.figures for reading in readings if reading.up]

    def known(reduce: Callable[[list[float]], float], figure: str) -> float | None:
        values = [value for figures in live if (value := getattr(figures, figure)) is not None]
        return reduce(values) if values else None

    worst = max(
        (f for f in live if f.ttft_p95_s is not None), key=lambda f: f.ttft_p95_s or 0.0, default=None
    )
    return {
        "tokens_per_s": known(sum, "generation_tokens_per_s"),
        "running": known(sum, "running"),
        "waiting": known(sum, "waiting"),
        "acceptance_rate": known(statistics.median, "acceptance_rate"),
        "mean_acceptance_length": known(statistics.median, "mean_acceptance_length"),
        "kv_cache_usage": known(max, "kv_cache_usage"),
        "ttft_p95_s": None if worst is None else worst.ttft_p95_s,
        "ttft_p95_bounds": None if worst is None else worst.quantile_bounds.get("ttft_p95_s"),
    }


def matches(row: FleetRow, text: str) -> bool:
    """The dashboard's `/` filter: a piece of the instance, its model or its group."""
    return not text or any(text in (part or "").lower() for part in (row.name, row.model, row.group))


def fleet_rows(
    instances: Sequence[Instance],
    *,
    sort: SortColumn = "status",
    reverse: bool = False,
    filter_text: str = "",
) -> list[FleetRow]:
    """The table top to bottom: per group its summary row (of the shown instances), then those sorted."""
    readings = {instance.name: instance.reading for instance in instances}
    text = filter_text.strip().lower()
    by_group: dict[str, list[FleetRow]] = {}
    fleet = [reading for reading in readings.values() if isinstance(reading, FleetReading)]
    spreads_of: dict[str, list[Spread]] = {}
    for spread in group_spreads(fleet):
        spreads_of.setdefault(spread.group, []).append(spread)
    marked = {group: markers(spreads) for group, spreads in spreads_of.items()}
    for instance in instances:
        row = instance_row(instance, marked.get(group_of(instance.reading), {}))
        if matches(row, text):
            by_group.setdefault(row.group, []).append(row)
    result: list[FleetRow] = []
    for group in sorted(by_group):
        members = by_group[group]
        shown = [reading for row in members if isinstance(reading := readings.get(row.name), FleetReading)]
        far = sum(row.off_far for row in members)
        up = sum(row.status == "up" for row in members)
        # Prometheus failed: nothing is known of the members, which are not down ("0/3 up" said so)
        unknown = all(row.status == "no data" for row in members)
        spreads = group_spreads(shown) if text else spreads_of.get(group, [])  # unfiltered: known already
        known = [s for s in spreads if s.figure == "acceptance_rate"]
        even = "even" if known and known[0].members >= 3 and not far else ""
        result.append(
            FleetRow(
                key=GROUP_KEY_PREFIX + group,
                name=group or "(no label)",
                status="no data" if unknown else f"{up}/{len(members)} up",
                group=group,
                summary=True,
                **summary_figures(shown),
                off=f"{far} off" if far else even,
                off_far=bool(far),
                up=up,
                members=len(members),
            )
        )
        result += sorted_rows(members, sort, reverse=reverse)
    return result
