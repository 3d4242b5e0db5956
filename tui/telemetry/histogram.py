"""Histogram quantiles computed exactly like Prometheus' `histogram_quantile`."""

from __future__ import annotations

import math
from collections.abc import Mapping


def histogram_quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """The q-quantile of a cumulative histogram as promql/quantile.go `bucketQuantile` gives it; None
    where Prometheus gives NaN (no observations, no +Inf bucket, fewer than two buckets)."""
    result = quantile_in_bucket(q, buckets)
    return None if result is None else result[0]


def quantile_in_bucket(q: float, buckets: Mapping[float, float]) -> tuple[float, float, float] | None:
    """(`histogram_quantile`, lower and upper bound of the bucket holding the rank), or None: in the first
    bucket (from 0) or the +Inf one the value says little, and the bounds say how little."""
    if math.isnan(q):
        return None
    if q < 0:
        return -math.inf, -math.inf, -math.inf
    if q > 1:
        return math.inf, math.inf, math.inf
    points = sorted((bound, count) for bound, count in buckets.items() if not math.isnan(bound))
    if len(points) < 2 or points[-1][0] != math.inf:
        return None
    bounds = [bound for bound, _ in points]
    counts: list[float] = []
    highest = 0.0
    for _, count in points:
        if math.isnan(count):
            return None
        highest = max(highest, count)
        counts.append(highest)
    total = counts[-1]
    if total <= 0:
        return None
    rank = q * total
    index = next(i for i, count in enumerate(counts) if count >= rank)
    if index == len(counts) - 1:
        return bounds[-2], bounds[-2], math.inf
    if index == 0 and bounds[0] <= 0:
        return bounds[0], bounds[0], bounds[0]
    start = 0.0
    count = counts[index]
    if index > 0:
        start = bounds[index - 1]
        count -= counts[index - 1]
        rank -= counts[index - 1]
    if count <= 0:
        return bounds[index], start, bounds[index]
    return start + (bounds[index] - start) * (rank / count), start, bounds[index]


def is_vague(value: float, lower: float, upper: float) -> bool:
    """True when the bucket (the first, the +Inf one, or one wider than the value) says more than it."""
    return lower == 0 or math.isinf(upper) or (upper - lower) > abs(value)
