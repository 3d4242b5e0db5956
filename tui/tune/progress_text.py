"""The one line that says where a sweep is, for the tune screen and `spectop tune` alike."""

from __future__ import annotations

from tui.format import fmt_duration, fmt_eta, fmt_rate
from tui.tune.runner import TuneProgress


def progress_line(progress: TuneProgress) -> str:
    """ "[3/12] burst k=2 c=8 42%   1 min   ETA 6:10": step, what it does, elapsed, time left."""
    where = f"[{progress.step}/{progress.steps}] {progress.message}"
    if progress.phase == "burst":
        where += f" {fmt_rate(progress.burst_fraction)}"
    return f"{where}   {fmt_duration(progress.elapsed_s)}   {fmt_eta(progress.eta_s)}"
