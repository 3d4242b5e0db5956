"""The fleet table as plain data: one row per instance, grouped, a summary row per group, sorted.

Core code (no Textual), used by `tui.widgets.fleet_table`. Groups come by the settings' `group_by`
label (`FleetReading.group`), each group's summary row first (tui.fleet.spread: summed tokens/s and
queue, median acceptance and mean length, the worst TTFT p95 and KV use), then its instances by the
sort column; unknown figures (None, "–") sort after every known one whichever the direction. The
`off` marker says how far an instance is off its group (or one of its engines off the others), and
on a group's row how many of its members are. The field names follow `EndpointRow` (the dashboard's
table, tui/telemetry/endpoint_row.py), so the two can become one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tui.fleet.poller import FleetReading
from tui.fleet.spread import Spread, engine_spreads, group_spreads, group_summaries
from tui.telemetry.reading import EndpointReading

SortColumn = Literal[
    "status", "name", "model", "tokens_per_s", "ttft_p95", "acceptance", "mean_length", "running", "kv"
]
SORT_COLUMNS: tuple[SortColumn, ...] = (
    "status", "name", "model", "tokens_per_s", "ttft_p95", "acceptance", "mean_length", "running", "kv",
)  # fmt: skip
# Worst first when sorted ascending: what needs a look comes to the top.
STATUS_ORDER = {"down": 0, "no data": 1, "stale": 2, "restarting": 2, "waiting": 3, "up": 4}
GROUP_KEY_PREFIX = "\x00group:"  # row keys of summary rows (an instance name never starts so)
SHORT_FIGURE = {"acceptance_rate": "acc", "generation_tokens_per_s": "tok"}


@dataclass(frozen=True, slots=True)
class FleetRow:
    key: str  # the instance (the board's endpoint name), or GROUP_KEY_PREFIX + group
    name: str
    status: str  # up, down, stale, no data (Prometheus failed), waiting; a group's: "3/4 up"
    group: str
    summary: bool = False
    backend: str | None = None
    model: str | None = None
    tokens_per_s: float | None = None
    ttft_p95_s: float | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None
    alerts: int = 0
    worst_alert: str | None = None  # "critical" / "warning"
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
    if isinstance(reading, FleetReading) and reading.prometheus_error:
        return "no data"
    if (reading.error or "").startswith("stale"):
        return "stale"
    return card_status


def group_of(reading: EndpointReading | None) -> str:
    return (reading.group if isinstance(reading, FleetReading) else None) or ""


def _marker(spread: Spread, member: str) -> str | None:
    outlier = next((outlier for outlier in spread.outliers if outlier.member == member), None)
    if outlier is None:
        return None
    return f"{SHORT_FIGURE.get(spread.figure, spread.figure)}{outlier.deviation:+.0%}"


def instance_row(instance: Instance, spreads: Sequence[Spread]) -> FleetRow:
    reading = instance.reading
    severities = instance.alert_severities
    worst = "critical" if "critical" in severities else ("warning" if severities else None)
    figures = reading.figures if reading is not None and reading.up else None
    off = ""
    for spread in spreads:  # acceptance before tokens/s (the order of DEFAULT_LIMITS)
        marker = _marker(spread, instance.name)
        if marker is not None:
            off = marker
            break
    if not off and isinstance(reading, FleetReading) and reading.up and reading.engines:
        for spread in engine_spreads(reading):
            if spread.outliers:
                engine = spread.outliers[0].member.rpartition("engine=")[2]
                off = f"eng{engine} {SHORT_FIGURE.get(spread.figure, '')}".strip()
                break
    return FleetRow(
        key=instance.name,
        name=instance.name,
        status=fleet_status(reading, instance.status),
        group=group_of(reading),
        backend=reading.backend if reading is not None else None,
        model=reading.model if reading is not None else None,
        tokens_per_s=figures.generation_tokens_per_s if figures else None,
        ttft_p95_s=figures.ttft_p95_s if figures else None,
        acceptance_rate=figures.acceptance_rate if figures else None,
        mean_acceptance_length=figures.mean_acceptance_length if figures else None,
        running=figures.running if figures else None,
        waiting=figures.waiting if figures else None,
        kv_cache_usage=figures.kv_cache_usage if figures else None,
        alerts=len(severities),
        worst_alert=worst,
        off=off,
        off_far=bool(off),
    )


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """A name's sort key with its numbers as numbers: 10.1.0.2:8000 before 10.1.0.10:8000."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text.lower()))


_SORT_VALUE: dict[SortColumn, Callable[[FleetRow], object]] = {
    "status": lambda row: STATUS_ORDER.get(row.status, 9) - (0.5 if row.worst_alert == "critical" else 0),
    "name": lambda row: natural(row.name),
    "model": lambda row: (row.model or "").lower() or None,
    "tokens_per_s": lambda row: row.tokens_per_s,
    "ttft_p95": lambda row: row.ttft_p95_s,
    "acceptance": lambda row: row.acceptance_rate,
    "mean_length": lambda row: row.mean_acceptance_length,
    "running": lambda row: row.running,
    "kv": lambda row: row.kv_cache_usage,
}


def sorted_rows(rows: Sequence[FleetRow], column: SortColumn, *, reverse: bool = False) -> list[FleetRow]:
    """Rows by `column` (name breaks ties); unknown values last in either direction."""
    value = _SORT_VALUE[column]
    known = sorted((row for row in rows if value(row) is not None), key=lambda row: natural(row.name))
    known.sort(key=value, reverse=reverse)  # type: ignore[arg-type]  # stable: ties stay by name
    unknown = sorted((row for row in rows if value(row) is None), key=lambda row: natural(row.name))
    return known + unknown


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
    """The table top to bottom: per group (by name) its summary row, then its shown instances sorted.

    The summary and the spread are over the group's instances the filter shows."""
    readings = {instance.name: instance.reading for instance in instances}
    text = filter_text.strip().lower()
    by_group: dict[str, list[FleetRow]] = {}
    fleet = [reading for reading in readings.values() if isinstance(reading, FleetReading)]
    spreads_of: dict[str, list[Spread]] = {}
    for spread in group_spreads(fleet):
        spreads_of.setdefault(spread.group, []).append(spread)
    for instance in instances:
        row = instance_row(instance, spreads_of.get(group_of(instance.reading), []))
        if matches(row, text):
            by_group.setdefault(row.group, []).append(row)
    result: list[FleetRow] = []
    for group in sorted(by_group):
        members = by_group[group]
        shown = [reading for row in members if isinstance(reading := readings.get(row.name), FleetReading)]
        summary = group_summaries(shown)
        far = sum(row.off_far for row in members)
        up = sum(row.status == "up" for row in members)
        known = [s for s in group_spreads(shown) if s.figure == "acceptance_rate"]
        even = "even" if known and known[0].members >= 3 and not far else ""
        head = summary[0] if summary else None
        result.append(
            FleetRow(
                key=GROUP_KEY_PREFIX + group,
                name=group or "(no label)",
                status=f"{up}/{len(members)} up",
                group=group,
                summary=True,
                tokens_per_s=head.generation_tokens_per_s if head else None,
                ttft_p95_s=head.ttft_p95_s if head else None,
                acceptance_rate=head.acceptance_rate if head else None,
                mean_acceptance_length=head.mean_acceptance_length if head else None,
                running=head.running if head else None,
                waiting=head.waiting if head else None,
                kv_cache_usage=head.kv_cache_usage if head else None,
                off=f"{far} off" if far else even,
                off_far=bool(far),
                up=up,
                members=len(members),
            )
        )
        result += sorted_rows(members, sort, reverse=reverse)
    return result
