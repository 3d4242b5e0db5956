"""The rows of `spectop snapshot --prometheus URL`, one per instance: a table, or JSON lines with a direct
snapshot's fields, `url` being the instance (the command: tui/commands/snapshot.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.fleet.poller import FleetReading
from tui.format import UNKNOWN, figure_text
from tui.sanitize import safe_line
from tui.tables import Table
from tui.telemetry.figures import Figures
from tui.telemetry.plausible_figures import dropped_words
from tui.telemetry.snapshot_record import snapshot_record

if TYPE_CHECKING:
    from tui.advice.advisor import Advice


def row(
    reading: FleetReading, advice: Advice | None = None, group_advice: Advice | None = None
) -> dict[str, Any]:
    """A direct snapshot's JSON line (the same record type, so the same fields), url = the instance;
    `advice` the instance's, `group` and `group_advice` its group's (tui/advice/fleet.py)."""
    record = snapshot_record(
        url=reading.instance,
        backend=reading.backend,
        up=reading.up,
        model=reading.model,
        window_s=reading.window_s,
        figures=_shown(reading),
        error=reading.error,
    )
    record["advice"] = None if advice is None else advice.as_json()
    record["group"] = reading.group
    record["group_advice"] = None if group_advice is None else group_advice.as_json()
    record["impossible_figures"] = reading.impossible_figures  # dropped so far (each one's note says why)
    return record


def _shown(reading: FleetReading) -> Figures:
    """Like a direct snapshot: a down instance has no figures (not the window's last ones)."""
    return reading.figures if reading.up else Figures()


_COLUMNS = ("instance", "status", "backend", "tok/s", "accept", "len", "TTFT p95", "run/wait", "KV", "model")
_FIGURES = ("generation_tokens_per_s", "acceptance_rate", "mean_acceptance_length", "ttft_p95_s")
_LEFT = {0, 1, 2, 9}  # text columns; figures are right-aligned


def table(readings: list[FleetReading]) -> list[str]:
    rows = []
    for reading in readings:
        f = _shown(reading)
        rows.append(
            (  # labels are Prometheus's (the targets'): untrusted text
                safe_line(reading.instance),
                "up" if reading.up else "DOWN",
                safe_line(reading.backend or "?"),
                *(figure_text(f, key) for key in _FIGURES),
                f"{figure_text(f, 'running')}/{figure_text(f, 'waiting')}",
                figure_text(f, "kv_cache_usage"),
                safe_line(reading.model or UNKNOWN),
            )
        )
    lines = Table(_COLUMNS, rows).text(left=_LEFT, gap="  ")
    for reading in readings:
        if reading.error:
            lines.append(safe_line(f"{reading.instance}: {reading.error}"))
        if reading.impossible_figures:
            lines.append(safe_line(f"{reading.instance}: {dropped_words(reading.impossible_figures)}"))
    return lines
