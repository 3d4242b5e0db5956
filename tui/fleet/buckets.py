"""The bucket bounds of the fleet's latency histograms: `histogram_quantile` answers a bare number, so each
instance's `le` bounds are asked and each quantile placed in its bucket with the same notes as direct
scraping ("< 100 ms", "> 10 s"); until they are known, it is noted as interpolated by Prometheus."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from tui.fleet.client import SampleJson
from tui.fleet.queries import selector
from tui.telemetry.backends import sglang, vllm
from tui.telemetry.backends.base import note_bucket

# The quantile figures of fleet mode and the histogram each is of (llama.cpp has no TTFT histogram).
QUANTILE_HISTOGRAMS: dict[str, str] = {
    "ttft_p50_s": "time_to_first_token_seconds",
    "ttft_p95_s": "time_to_first_token_seconds",
}
_PREFIXES = (vllm.PREFIX, sglang.PREFIX)
UNKNOWN_BUCKET = "interpolated by Prometheus (histogram_quantile); its bucket bounds are not known yet"

Bounds = dict[tuple[str, str], tuple[float, ...]]  # (instance, histogram) -> its finite `le`, ascending


def bucket_bounds_query(matchers: str) -> str:
    """One series per instance, histogram and bucket bound: `count by (instance, __name__, le)`."""
    names = sorted(
        {f"{prefix}{histogram}_bucket" for prefix in _PREFIXES for histogram in QUANTILE_HISTOGRAMS.values()}
    )
    series = selector("", matchers, f'__name__=~"{"|".join(names)}"')
    return f"count by (instance, __name__, le) ({series})"


def _histogram(name: str) -> str | None:
    for prefix in _PREFIXES:
        if name.startswith(prefix) and name.endswith("_bucket"):
            return name.removeprefix(prefix).removesuffix("_bucket")
    return None


def bucket_bounds(samples: Iterable[SampleJson]) -> Bounds:
    """The finite bucket bounds of each (instance, histogram) in the answer of `bucket_bounds_query`."""
    found: dict[tuple[str, str], set[float]] = {}
    for sample in samples:
        metric = sample.get("metric", {})
        instance, histogram = metric.get("instance"), _histogram(metric.get("__name__", ""))
        try:
            bound = float(metric.get("le", "nan"))
        except ValueError:
            continue
        if instance is None or histogram is None or not math.isfinite(bound):
            continue
        found.setdefault((instance, histogram), set()).add(bound)
    return {key: tuple(sorted(bounds)) for key, bounds in found.items()}


def bucket_of(value: float, bounds: tuple[float, ...]) -> tuple[float, float] | None:
    """The bucket (lower, upper) that `histogram_quantile` placed `value` in: the first bucket from 0,
    the +Inf bucket (upper inf) at the highest finite bound, which is all it answers there."""
    if not bounds or not math.isfinite(value):
        return None
    if value >= bounds[-1]:
        return bounds[-1], math.inf
    lower = 0.0
    for bound in bounds:
        if value <= bound:
            return lower, bound
        lower = bound
    return None  # not reached: value < bounds[-1]


def quantile_notes(
    instance: str, figures: Mapping[str, object], bounds: Bounds
) -> tuple[dict[str, str], dict[str, tuple[float, float | None]]]:
    """The notes and `quantile_bounds` of an instance's quantile figures, as direct scraping gives them."""
    notes: dict[str, str] = {}
    placed: dict[str, tuple[float, float | None]] = {}
    for figure, histogram in QUANTILE_HISTOGRAMS.items():
        value = figures.get(figure)
        if not isinstance(value, float | int):
            continue
        known = bounds.get((instance, histogram))
        bucket = bucket_of(float(value), known) if known else None
        if bucket is None:
            notes[figure] = UNKNOWN_BUCKET
            continue
        note_bucket(figure, float(value), bucket[0], bucket[1], notes, placed)
    return notes, placed
