"""One `spectop snapshot --json` line: the same fields for a scraped endpoint and for a fleet instance."""

from __future__ import annotations

from typing import Any

from tui.telemetry.figures import FIGURE_NAMES, Figures

# Why the figures are what they are, after the figures and before the error.
EXPLANATION_FIELDS = ("notes", "covered_s", "restarted_in_window", "restarted_s_ago", "quantile_bounds")


def snapshot_record(
    *,
    url: str,
    backend: str | None,
    up: bool,
    model: str | None,
    window_s: float | None,
    figures: Figures | None,
    error: str | None,
) -> dict[str, Any]:
    dumped = (figures or Figures()).model_dump()
    record: dict[str, Any] = {"url": url, "backend": backend, "up": up, "model": model, "window_s": window_s}
    for name in (*FIGURE_NAMES, *EXPLANATION_FIELDS):
        record[name] = dumped[name]
    record["error"] = error
    return record
