"""Histogram quantiles computed exactly like Prometheus' `histogram_quantile`.

Buckets are (upper bound, cumulative count) pairs, typically the per-bucket
increase over a window. Bounds are compared as numbers, so `le="1"` and
`le="1.0"` (or float noise such as `0.0016200000000000001`) are one bucket
when merged by `merge_buckets`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping


def merge_buckets(bucket_sets: Iterable[Mapping[float, float]]) -> dict[float, float]:
    """Sum cumulative bucket counts of several label sets, bucket by bucket (by numeric bound)."""
    merged: dict[float, float] = {}
    for buckets in bucket_sets:
        for bound, count in buckets.items():
            merged[bound] = merged.get(bound, 0.0) + count
    return merged


def histogram_quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """The q-quantile (0..1) of a cumulative histogram, or None when it cannot be known.

    Follows Prometheus (promql/quantile.go `bucketQuantile`): needs a +Inf
    bucket and at least two buckets; linear interpolation inside the bucket
    holding the rank, the first bucket starting at 0 (unless its bound is
    negative); a rank in the +Inf bucket returns the highest finite bound.
    Counts that dip (float noise, merged series) are made monotonic first.
    Returns None (instead of NaN) when there are no observations.
    """
    result = quantile_in_bucket(q, buckets)
    return None if result is None else result[0]


def quantile_in_bucket(q: float, buckets: Mapping[float, float]) -> tuple[float, float, float] | None:
    """(`histogram_quantile`, lower bound, upper bound of the bucket holding the rank), or None.

    The bounds say how much the interpolated value is worth: inside the first bucket
    (lower bound 0) every sample may be far below the value, and in the +Inf bucket
    (upper bound inf) the value is only the highest finite bound.
    """
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
    """True when the bucket says more than the interpolated value: the first bucket (from 0),
    the +Inf bucket, or a bucket wider than the value itself."""
    return lower == 0 or math.isinf(upper) or (upper - lower) > abs(value)
