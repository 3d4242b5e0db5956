"""One endpoint as one row of a table: the figures an overview sorts on, from its latest reading.

Used by the dashboard's table view and meant for a fleet view (hundreds of instances): plain data, no
UI, cheap to build and to compare (a row that did not change is not redrawn). Unknown figures stay
`None` (shown as "–"), and sort after every known one whichever the direction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tui.telemetry.reading import EndpointReading

SortColumn = Literal[
    "status", "name", "model", "tokens_per_s", "ttft_p95", "acceptance", "mean_length", "running", "kv"
]
SORT_COLUMNS: tuple[SortColumn, ...] = (
    "status", "name", "model", "tokens_per_s", "ttft_p95", "acceptance", "mean_length", "running", "kv",
)  # fmt: skip
# Worst first when sorted ascending: what needs a look comes to the top.
STATUS_ORDER = {"down": 0, "restarting": 1, "stale": 2, "waiting": 3, "up": 4}


@dataclass(frozen=True, slots=True)
class EndpointRow:
    name: str
    status: str  # up, down, stale, waiting, restarting
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


def endpoint_row(
    name: str,
    reading: EndpointReading | None,
    *,
    status: str,
    backend: str | None = None,
    model: str | None = None,
    alert_severities: Sequence[str] = (),
) -> EndpointRow:
    """The row of `name` from its latest reading (None before the first scrape); a down endpoint has no
    figures, not its last ones."""
    worst = "critical" if "critical" in alert_severities else ("warning" if alert_severities else None)
    if reading is None:
        return EndpointRow(
            name, status, backend, model, alerts=len(alert_severities), worst_alert=worst
        )  # fmt: skip
    figures = reading.figures if reading.up else None
    return EndpointRow(
        name=name,
        status=status,
        backend=reading.backend or backend,
        model=reading.model or model,
        tokens_per_s=figures.generation_tokens_per_s if figures else None,
        ttft_p95_s=figures.ttft_p95_s if figures else None,
        acceptance_rate=figures.acceptance_rate if figures else None,
        mean_acceptance_length=figures.mean_acceptance_length if figures else None,
        running=figures.running if figures else None,
        waiting=figures.waiting if figures else None,
        kv_cache_usage=figures.kv_cache_usage if figures else None,
        alerts=len(alert_severities),
        worst_alert=worst,
    )


_SORT_VALUE: dict[SortColumn, Callable[[EndpointRow], float | str | None]] = {
    "status": lambda row: STATUS_ORDER.get(row.status, 9) - (0.5 if row.worst_alert == "critical" else 0),
    "name": lambda row: row.name.lower(),
    "model": lambda row: (row.model or "").lower() or None,
    "tokens_per_s": lambda row: row.tokens_per_s,
    "ttft_p95": lambda row: row.ttft_p95_s,
    "acceptance": lambda row: row.acceptance_rate,
    "mean_length": lambda row: row.mean_acceptance_length,
    "running": lambda row: row.running,
    "kv": lambda row: row.kv_cache_usage,
}


def sorted_rows(
    rows: Sequence[EndpointRow], column: SortColumn, *, reverse: bool = False
) -> list[EndpointRow]:
    """Rows by `column` (name breaks ties); unknown values last in either direction."""
    value = _SORT_VALUE[column]
    known = [row for row in rows if value(row) is not None]
    unknown = [row for row in rows if value(row) is None]
    known.sort(key=lambda row: row.name.lower())
    known.sort(key=value, reverse=reverse)  # type: ignore[arg-type]  # stable: ties stay by name
    unknown.sort(key=lambda row: row.name.lower())
    return known + unknown
