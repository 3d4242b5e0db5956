"""One endpoint as one row of a table (dashboard and fleet), and how rows sort."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, TypeVar, get_args

from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading

SortColumn = Literal[
    "status", "name", "model", "tokens_per_s", "ttft_p95", "acceptance", "mean_length", "running", "kv"
]
SORT_COLUMNS: tuple[SortColumn, ...] = get_args(SortColumn)
# Worst first when sorted ascending ("no data": fleet mode, Prometheus failed).
STATUS_ORDER = {"down": 0, "restarting": 1, "no data": 1, "stale": 2, "waiting": 3, "up": 4}


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
    ttft_p95_bounds: tuple[float, float | None] | None = None  # the bucket, when the p95 is a bound
    # Figure fields shown since the server started (the first reading's `Figures.lifetime`).
    lifetime: frozenset[str] = frozenset()


Row = TypeVar("Row", bound=EndpointRow)
_SAME_NAMES = (
    "ttft_p95_s",
    "acceptance_rate",
    "mean_acceptance_length",
    "running",
    "waiting",
    "kv_cache_usage",
)
# a row's figure field → the figure it shows
ROW_FIGURES = {"tokens_per_s": "generation_tokens_per_s", **{name: name for name in _SAME_NAMES}}


def row_figures(figures: object | None) -> dict[str, float | None]:
    """The figure fields of a row from a reading's `Figures` (or a fleet group's summary); None: unknown."""
    if figures is None:
        return dict.fromkeys(ROW_FIGURES)
    return {field: getattr(figures, source) for field, source in ROW_FIGURES.items()}


def _with_lifetime(values: dict[str, float | None], figures: Figures) -> frozenset[str]:
    """Fill the unknown fields of `values` the first reading's lifetime figures give; those fields."""
    lifetime = figures.lifetime
    if lifetime is None:
        return frozenset()
    filled = set()
    for field, source in ROW_FIGURES.items():
        value = getattr(lifetime, source)
        if values[field] is None and value is not None:
            values[field] = value
            filled.add(field)
    return frozenset(filled)


def _p95_bounds(reading: EndpointReading, lifetime: frozenset[str]) -> tuple[float, float | None] | None:
    """The bucket of the shown TTFT p95 (the window's, or the lifetime one), when it is a bound."""
    if not reading.up:
        return None
    figures = reading.figures.lifetime if "ttft_p95_s" in lifetime else reading.figures
    return figures.quantile_bounds.get("ttft_p95_s") if figures is not None else None


def row_fields(
    name: str,
    reading: EndpointReading | None,
    *,
    status: str,
    backend: str | None = None,
    model: str | None = None,
    alert_severities: Sequence[str] = (),
) -> dict[str, Any]:
    """The fields of `name`'s row from its latest reading (a down endpoint: no figures)."""
    worst = "critical" if "critical" in alert_severities else ("warning" if alert_severities else None)
    fields = {"name": name, "status": status, "alerts": len(alert_severities), "worst_alert": worst}
    if reading is None:
        return {**fields, "backend": backend, "model": model}
    values = row_figures(reading.figures if reading.up else None)
    lifetime = _with_lifetime(values, reading.figures) if reading.up else frozenset()
    return {
        **fields,
        "backend": reading.backend or backend,
        "model": reading.model or model,
        **values,
        "ttft_p95_bounds": _p95_bounds(reading, lifetime),
        "lifetime": lifetime,
    }


@lru_cache(maxsize=8192)  # every row's name at every sort: a fleet's 1,000 every refresh
def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """A name's sort key with its numbers as numbers: 10.1.0.2:8000 before 10.1.0.10:8000."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text.lower()))


_SORT_VALUE: dict[SortColumn, Callable[[EndpointRow], object]] = {
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


def sorted_rows(rows: Sequence[Row], column: SortColumn, *, reverse: bool = False) -> list[Row]:
    """Rows by `column` (name breaks ties); unknown values last in either direction."""
    value = _SORT_VALUE[column]
    known = sorted((row for row in rows if value(row) is not None), key=lambda row: natural(row.name))
    known.sort(key=value, reverse=reverse)  # type: ignore[arg-type]  # stable: ties stay by name
    unknown = sorted((row for row in rows if value(row) is None), key=lambda row: natural(row.name))
    return known + unknown
