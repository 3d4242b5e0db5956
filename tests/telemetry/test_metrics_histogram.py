"""histogram_quantile behaves like Prometheus' (promql bucketQuantile)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.telemetry.backends.base import histogram_quantile

INF = math.inf


def test_vllm_sample_window_ttft() -> None:
    # Δbuckets of the vLLM sample (README): le 0.04 → 1, 0.06 → 2, 0.08 → 4.
    buckets = {0.02: 0.0, 0.04: 1.0, 0.06: 2.0, 0.08: 4.0, 0.1: 4.0, 0.25: 4.0, INF: 4.0}
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.06)
    assert histogram_quantile(0.9, buckets) == pytest.approx(0.076)
    assert histogram_quantile(0.95, buckets) == pytest.approx(0.078)


def test_first_bucket_interpolates_from_zero() -> None:
    assert histogram_quantile(0.5, {1.0: 10.0, INF: 10.0}) == pytest.approx(0.5)


def test_rank_in_inf_bucket_returns_highest_finite_bound() -> None:
    assert histogram_quantile(0.99, {1.0: 1.0, 2.0: 2.0, INF: 10.0}) == 2.0


def test_negative_first_bound_is_returned_as_is() -> None:
    assert histogram_quantile(0.1, {-1.0: 5.0, 0.0: 6.0, INF: 6.0}) == -1.0


@pytest.mark.parametrize(
    "buckets",
    [
        {},
        {INF: 5.0},  # a single bucket
        {1.0: 2.0, 2.0: 3.0},  # no +Inf bucket
        {1.0: 0.0, INF: 0.0},  # no observations
    ],
)
def test_unknown_quantiles_are_none(buckets: dict[float, float]) -> None:
    assert histogram_quantile(0.5, buckets) is None


def test_out_of_range_q_like_prometheus() -> None:
    buckets = {1.0: 1.0, INF: 1.0}
    assert histogram_quantile(-0.1, buckets) == -INF
    assert histogram_quantile(1.1, buckets) == INF
    assert histogram_quantile(math.nan, buckets) is None


def test_non_monotonic_counts_are_fixed_up() -> None:
    # A dip (float noise, merged series) must not produce a quantile outside the buckets.
    value = histogram_quantile(0.5, {1.0: 4.0, 2.0: 3.9, 3.0: 8.0, INF: 8.0})
    assert value is not None and 1.0 <= value <= 3.0


@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=10, unique=True),
    st.lists(st.floats(min_value=0, max_value=1e9), min_size=11, max_size=11),
    st.floats(min_value=0, max_value=1),
)
def test_quantile_stays_within_the_bounds(bounds: list[float], counts: list[float], q: float) -> None:
    bounds = sorted(bounds)
    cumulative = 0.0
    buckets = {}
    for bound, count in zip([*bounds, INF], counts, strict=False):
        cumulative += count
        buckets[bound] = cumulative
    value = histogram_quantile(q, buckets)
    if value is not None:
        assert min(0.0, bounds[0]) <= value <= max(bounds[-1], 0.0) or value == bounds[-1]
