"""Percentiles, summaries, bootstrap CIs and the verdict line."""

from __future__ import annotations

import random

import pytest

from tui.bench.report.summary import verdict_text
from tui.bench.stats import RateSample, bootstrap_pooled_ratio_ci, percentile, pooled_rate, summarize


def _per_request(values: list[float]) -> list[RateSample]:
    """One unit of time per value: the pooled rate is then the plain mean."""
    return [(value, 1.0) for value in values]


def test_percentile_interpolates_between_ranks() -> None:
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert percentile(values, 0) == 10.0
    assert percentile(values, 50) == 30.0
    assert percentile(values, 90) == pytest.approx(46.0)
    assert percentile(values, 100) == 50.0
    assert percentile([], 50) is None
    assert percentile([7.0], 99) == 7.0


def test_summarize_skips_unknown_and_keeps_none_for_nothing() -> None:
    summary = summarize([None, 1.0, 3.0, None])
    assert summary.mean == 2.0 and summary.p50 == 2.0
    empty = summarize([None, None])
    assert empty.mean is None and empty.p99 is None


def test_bootstrap_ci_covers_the_true_ratio_and_is_seeded() -> None:
    rng = random.Random(42)
    a = [rng.gauss(100, 10) for _ in range(60)]
    b = [rng.gauss(180, 15) for _ in range(60)]
    ci = bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), seed=3)
    assert ci is not None and ci[0] < 1.8 < ci[1] and ci[1] - ci[0] < 0.2
    assert bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), seed=3) == ci  # same seed


def test_paired_bootstrap_is_narrower_when_prompts_drive_the_spread() -> None:
    rng = random.Random(7)
    prompt_speed = [rng.uniform(50, 150) for _ in range(40)]
    a = [speed * rng.uniform(0.98, 1.02) for speed in prompt_speed]
    b = [speed * 1.5 * rng.uniform(0.98, 1.02) for speed in prompt_speed]
    paired = bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), paired=True, seed=1)
    independent = bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), seed=1)
    assert paired and independent
    assert paired[1] - paired[0] < (independent[1] - independent[0]) / 3
    assert paired[0] < 1.5 < paired[1]


def test_verdict_lines() -> None:
    assert verdict_text(1.8, (1.7, 1.9), 0.012, "acceptance 71%") == (
        "B is 1.80x faster (95% CI 1.70-1.90), TTFT +12 ms, acceptance 71%"
    )
    assert verdict_text(1.02, (0.95, 1.09), -0.003, None).startswith("no significant difference")
    assert verdict_text(0.5, (0.45, 0.55), 0.0, None).startswith("B is 2.00x slower")
    assert "no comparison" in verdict_text(None, None, None, None)


def test_pooled_ratio_ignores_a_stream_read_all_at_once() -> None:
    # Eight requests per arm: B decodes 100 tokens in 1 s, A in 2 s (B is 2x faster). One A
    # stream was read all at once by a busy client: its decode time looks like 1 ms.
    a = [(100.0, 2.0)] * 7 + [(100.0, 0.001)]
    b = [(100.0, 1.0)] * 8
    mean_ratio = (sum(t / d for t, d in b) / 8) / (sum(t / d for t, d in a) / 8)
    assert mean_ratio < 0.1  # the per-request mean says B is 10x slower
    pooled = pooled_rate(b) / pooled_rate(a)
    assert pooled == pytest.approx(1.75, rel=0.01)  # 800/8 s over 800/14.001 s
    low, high = bootstrap_pooled_ratio_ci(a, b, paired=True, seed=0)
    assert 1.0 < low <= pooled <= high


def test_too_few_values_or_no_duration_are_unknown() -> None:
    assert bootstrap_pooled_ratio_ci(_per_request([1.0]), _per_request([2.0, 3.0])) is None
    unequal = _per_request([1.0, 2.0]), _per_request([2.0, 3.0, 4.0])
    assert bootstrap_pooled_ratio_ci(*unequal, paired=True) is None
    assert pooled_rate([]) is None
    assert pooled_rate([(5.0, 0.0)]) is None
