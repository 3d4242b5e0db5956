"""A whole burst's summary: both arms, their comparison and greedy equivalence."""

from __future__ import annotations

from tui.bench.equivalence import compare_outputs
from tui.bench.report.arms import arm_summary
from tui.bench.report.comparison import comparison
from tui.bench.report.models import BurstSummary
from tui.bench.results import BurstResult


def burst_summary(result: BurstResult, *, with_detail: bool = True) -> BurstSummary:
    a = result.arms[0]
    b = result.arms[1] if len(result.arms) > 1 else None
    equivalence = None
    if b is not None and result.settings.temperature == 0.0:
        equivalence = compare_outputs(a.requests, b.requests)
    shared = b is not None and a.metrics_url is not None and a.metrics_url == b.metrics_url
    settings = result.settings
    return BurstSummary(
        a=arm_summary(a, with_detail=with_detail, settings=settings, shared_with=b if shared else None),
        b=arm_summary(b, with_detail=with_detail, settings=settings, shared_with=a if shared else None)
        if b
        else None,
        comparison=comparison(a, b, settings=settings) if b else None,
        equivalence=equivalence,
        settings=result.settings,
        started_at=result.started_at,
        duration_s=result.duration_s,
        cancelled=result.cancelled,
    )
