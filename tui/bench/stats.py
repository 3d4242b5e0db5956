"""Percentiles, summaries and bootstrap confidence intervals (pure Python, seeded `random`)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class Summary:
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks; `q` in 0..100; None for no data."""
    if not sorted_values:
        return None
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    position = (len(sorted_values) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return float(sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction)


def known(values: Sequence[float | None]) -> list[float]:
    """The values that are known (not None, finite), sorted: what `percentile` takes."""
    return sorted(v for v in values if v is not None and math.isfinite(v))


def summarize(values: Sequence[float | None]) -> Summary:
    ranked = known(values)
    if not ranked:
        return Summary()
    return Summary(sum(ranked) / len(ranked), *(percentile(ranked, q) for q in (50, 90, 99)))


RateSample = tuple[float, float]
"""(amount, duration) of one request, e.g. (decode tokens, decode seconds)."""


def pooled_rate(samples: Sequence[RateSample]) -> float | None:
    """Σ amount / Σ duration: one stream read all at once (tiny duration) cannot swing it."""
    duration = sum(d for _, d in samples)
    return sum(a for a, _ in samples) / duration if duration > 0 else None


def bootstrap_pooled_ratio_ci(
    a: Sequence[RateSample],
    b: Sequence[RateSample],
    *,
    paired: bool = False,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """CI of pooled_rate(b) / pooled_rate(a) by the percentile bootstrap (`paired`: index pairs)."""
    if paired and len(a) != len(b):
        return None
    return grouped_ratio_ci({0: a}, {0: b}, [0], paired=paired, seed=seed, level=level)


def grouped_ratio_ci(
    groups_a: Mapping[int, Sequence[RateSample]],
    groups_b: Mapping[int, Sequence[RateSample]],
    numbers: Sequence[int],
    *,
    resample_groups: bool = False,
    paired: bool | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """The pooled-ratio CI resampling the `numbers` groups (`resample_groups`), then requests within each;
    `paired` None: a group's requests are resampled as pairs when both arms have as many."""
    if sum(len(groups_a[n]) for n in numbers) < 2 or sum(len(groups_b[n]) for n in numbers) < 2:
        return None
    rng = random.Random(seed)
    ratios: list[float] = []
    for _ in range(resamples):
        sample_a: list[RateSample] = []
        sample_b: list[RateSample] = []
        for number in [rng.choice(numbers) for _ in numbers] if resample_groups else numbers:
            group_a, group_b = groups_a[number], groups_b[number]
            picks_a = [rng.randrange(len(group_a)) for _ in group_a]
            pairs = len(group_a) == len(group_b) if paired is None else paired
            picks_b = picks_a if pairs else [rng.randrange(len(group_b)) for _ in group_b]
            sample_a += [group_a[i] for i in picks_a]
            sample_b += [group_b[i] for i in picks_b]
        rate_a, rate_b = pooled_rate(sample_a), pooled_rate(sample_b)
        if rate_a and rate_b is not None:
            ratios.append(rate_b / rate_a)
    return percentile_interval(ratios, resamples, level)


def percentile_interval(ratios: list[float], resamples: int, level: float) -> tuple[float, float] | None:
    """The percentile bootstrap's interval of `ratios` (sorted in place); None under half the resamples."""
    if len(ratios) < resamples // 2:
        return None
    ratios.sort()
    tail = (1.0 - level) / 2 * 100
    low, high = percentile(ratios, tail), percentile(ratios, 100 - tail)
    return None if low is None or high is None else (low, high)
