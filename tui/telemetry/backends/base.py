"""What every backend shares: `PageSnapshot`, the window `Delta`, table-driven extraction, quantiles."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from itertools import accumulate
from typing import Any

from tui.format import fmt_bound
from tui.telemetry.prometheus import Sample


def quantile_in_bucket(q: float, buckets: Mapping[float, float]) -> tuple[float, float, float] | None:
    """(promql bucketQuantile, the bounds of the bucket holding the rank); None where Prometheus gives NaN."""
    if math.isnan(q):
        return None
    if q < 0:
        return -math.inf, -math.inf, -math.inf
    if q > 1:
        return math.inf, math.inf, math.inf
    points = sorted((bound, count) for bound, count in buckets.items() if not math.isnan(bound))
    if len(points) < 2 or points[-1][0] != math.inf:
        return None
    if any(math.isnan(count) for _, count in points):
        return None
    bounds = [bound for bound, _ in points]
    counts = list(accumulate((count for _, count in points), max, initial=0.0))[1:]  # made monotonic
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


# (quantity, series id, bucket bound or None)
CounterKey = tuple[str, tuple[tuple[str, str], ...], float | None]


class Kind(Enum):
    COUNTER = "counter"  # per-series counter; also histogram _sum / _count
    BUCKET = "bucket"  # histogram _bucket: keyed by its numeric `le`
    GAUGE_SUM = "gauge_sum"  # counts: summed over label sets
    GAUGE_MEAN = "gauge_mean"  # fractions: averaged over label sets


@dataclass(frozen=True, slots=True)
class Metric:
    kind: Kind
    quantity: str
    # Counters whose series differ by this label become quantity:<label value>.
    split_label: str | None = None


MetricTable = Mapping[str, Metric]


def histogram(base: str, quantity: str) -> dict[str, Metric]:
    """Table entries for a histogram: quantity_bucket, quantity_sum, quantity_count."""
    return {
        f"{base}_bucket": Metric(Kind.BUCKET, f"{quantity}_bucket"),
        f"{base}_sum": Metric(Kind.COUNTER, f"{quantity}_sum"),
        f"{base}_count": Metric(Kind.COUNTER, f"{quantity}_count"),
    }


@dataclass(frozen=True, slots=True)
class PageSnapshot:
    """The part of one scrape a backend needs, small enough to keep hundreds of."""

    counters: Mapping[CounterKey, float]
    gauges: Mapping[str, float]
    models: tuple[str, ...] = ()
    # Gauges per model_name, kept only when the page serves several models.
    model_gauges: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # Changes when the server restarted (process start time, `_created` stamps): a Unix time.
    restart_marker: float | None = None
    # The series that gave `restart_marker` (named where a restart is counted from it).
    restart_name: str | None = None
    # The first series printed twice on the page (a proxy merging pages): the page is inconsistent.
    duplicate: str | None = None


@dataclass(slots=True)
class Delta:
    """Counter increases over the usable segments of a window (resets excluded)."""

    seconds: float
    counters: dict[CounterKey, float] = field(default_factory=dict)
    # Per-segment figures summed over the window (backend-specific, may be NaN = unusable).
    extras: dict[str, float] = field(default_factory=dict)
    _totals: dict[str, float] | None = field(default=None, repr=False)
    _totals_size: int = field(default=0, repr=False)

    def total(self, quantity: str) -> float | None:
        """Sum of the increases of every series of one quantity; None when it has no series."""
        if self._totals is None or self._totals_size != len(self.counters):
            totals: dict[str, float] = {}
            for (name, _, bound), value in self.counters.items():
                if bound is None:
                    totals[name] = totals.get(name, 0.0) + value
            self._totals = totals
            self._totals_size = len(self.counters)
        return self._totals.get(quantity)

    def split(self, prefix: str) -> dict[str, float]:
        """Increases of `prefix:<value>` quantities, by label value (summed over series)."""
        marker = f"{prefix}:"
        result: dict[str, float] = {}
        for (name, _, bound), value in self.counters.items():
            if bound is None and name.startswith(marker):
                key = name[len(marker) :]
                result[key] = result.get(key, 0.0) + value
        return result

    def buckets(self, quantity: str) -> dict[float, float]:
        """Cumulative bucket increases of a histogram, merged over label sets by numeric bound."""
        merged: dict[float, float] = {}
        for (name, _, bound), value in self.counters.items():
            if bound is not None and name == quantity:
                merged[bound] = merged.get(bound, 0.0) + value
        return merged


def _series_id(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    # Page order of labels is stable for one server, so no sorting is needed to match scrapes.
    if "le" in labels:
        return tuple(item for item in labels.items() if item[0] != "le")
    return tuple(labels.items())


# (kind, counter key or gauge quantity, model name); None = skip.
_Plan = tuple[Kind, "CounterKey | str", "str | None"] | None


def _plan(metric: Metric, labels: Mapping[str, str]) -> _Plan:
    model = labels.get("model_name") or None
    kind = metric.kind
    if kind is Kind.COUNTER:
        quantity = metric.quantity
        if metric.split_label is not None:
            quantity = f"{quantity}:{labels.get(metric.split_label, '')}"
        return kind, (quantity, _series_id(labels), None), model
    if kind is Kind.BUCKET:
        try:
            bound = float(labels["le"])
        except (KeyError, ValueError):
            return None
        if math.isnan(bound):
            return None
        return kind, (metric.quantity, _series_id(labels), bound), model
    return kind, metric.quantity, model


_MEMO_MAX = 50_000


class SeriesMemo:
    """Each series' plan for ONE endpoint and backend table, keyed by the series text; cleared when full."""

    __slots__ = ("_plans", "_table", "identities")

    def __init__(self) -> None:
        self._table: MetricTable | None = None
        self._plans: dict[str, _Plan] = {}
        # For backends that merge ranks (SGLang): series -> (identity without rank labels, rank).
        self.identities: dict[str, tuple[tuple[str, tuple[tuple[str, str], ...]], int]] = {}

    def plans(self, table: MetricTable) -> dict[str, _Plan]:
        """The plans of `table`'s series (a new table: a new server behind the URL, start over)."""
        if table is not self._table:
            self._table = table
            self._plans = {}
        elif len(self._plans) >= _MEMO_MAX:
            self._plans.clear()
        if len(self.identities) >= _MEMO_MAX:
            self.identities.clear()
        return self._plans


def extract(
    samples: Iterable[Sample],
    table: MetricTable,
    *,
    memo: SeriesMemo | None = None,
    keep: Callable[[list[tuple[Sample, Metric]], SeriesMemo], list[tuple[Sample, Metric]]] | None = None,
    restart_names: tuple[str, ...] = (),
) -> PageSnapshot:
    """A PageSnapshot from the samples named in `table`; `keep` may filter duplicates (ranks)."""
    memo = memo or SeriesMemo()
    plans = memo.plans(table)
    selected: list[tuple[Sample, Metric]] = []
    restart_marker: float | None = None
    restart_name: str | None = None
    models: dict[str, None] = {}
    table_get = table.get
    for sample in samples:
        metric = table_get(sample.name)
        if metric is None:
            if sample.name in restart_names and sample.value > (restart_marker or -math.inf):
                restart_marker, restart_name = sample.value, sample.name
            continue
        selected.append((sample, metric))
    if keep is not None:
        selected = keep(selected, memo)
    counters: dict[CounterKey, float] = {}
    gauge_values: dict[str, list[float]] = {}
    kinds: dict[str, Kind] = {}
    model_gauge_values: dict[str, dict[str, list[float]]] = {}
    isfinite = math.isfinite
    seen_gauges: set[str] = set()  # series texts
    duplicate: str | None = None
    for sample, metric in selected:
        value = sample.value
        if not isfinite(value):
            continue
        if sample.series not in plans:
            plans[sample.series] = _plan(metric, sample.labels)
        if (plan := plans[sample.series]) is None:
            continue
        kind, target, model = plan
        if model is not None:
            models[model] = None
        if not isinstance(target, str):  # a counter or bucket: keyed per series
            if target in counters:
                duplicate = duplicate or _describe(sample)
            counters[target] = value
        else:
            if sample.series in seen_gauges:
                duplicate = duplicate or _describe(sample)
            seen_gauges.add(sample.series)
            gauge_values.setdefault(target, []).append(value)
            kinds[target] = kind
            if model is not None:
                model_gauge_values.setdefault(model, {}).setdefault(target, []).append(value)
    return PageSnapshot(
        counters=counters,
        gauges=_aggregate(gauge_values, kinds),
        models=tuple(models),
        restart_marker=restart_marker,
        restart_name=restart_name,
        model_gauges={model: _aggregate(values, kinds) for model, values in model_gauge_values.items()}
        if len(models) > 1
        else {},
        duplicate=duplicate,
    )


def _describe(sample: Sample) -> str:
    labels = ",".join(f'{key}="{value}"' for key, value in sample.labels.items())
    text = f"{sample.name}{{{labels}}}" if labels else sample.name
    return f"the series {text if len(text) <= 100 else text[:99] + '…'} appears more than once"


def _aggregate(values: dict[str, list[float]], kinds: dict[str, Kind]) -> dict[str, float]:
    gauges: dict[str, float] = {}
    for quantity, numbers in values.items():
        total = sum(numbers)
        if math.isfinite(total):
            gauges[quantity] = total if kinds[quantity] is Kind.GAUGE_SUM else total / len(numbers)
    return gauges


def delta_of_model(delta: Delta, model: str) -> Delta:
    """The part of a Delta from series labelled model_name=model."""
    label = ("model_name", model)
    counters = {key: value for key, value in delta.counters.items() if label in key[1]}
    return Delta(seconds=delta.seconds, counters=counters, extras=dict(delta.extras))


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    result = numerator / denominator
    return result if math.isfinite(result) else None


def rate(delta: Delta | None, quantity: str) -> float | None:
    return None if delta is None else ratio(delta.total(quantity), delta.seconds)


def mean(delta: Delta | None, quantity: str) -> float | None:
    """Δsum / Δcount of a histogram."""
    return None if delta is None else ratio(delta.total(f"{quantity}_sum"), delta.total(f"{quantity}_count"))


def histogram_figures(delta: Delta | None, last: PageSnapshot, notes: dict[str, str]) -> dict[str, Any]:
    """The figures vLLM and SGLang read alike (TTFT, e2e and prompt-length histograms, queue gauges)."""
    figures: dict[str, Any] = {
        "ttft_mean_s": mean(delta, "ttft"),
        "e2e_mean_s": mean(delta, "e2e"),
        "running": last.gauges.get("running"),
        "waiting": last.gauges.get("waiting"),
        "prompt_tokens_mean": mean(delta, "prompt_len"),
        "notes": notes,
        "quantile_bounds": {},
    }
    for q, figure in ((0.5, "ttft_p50_s"), (0.95, "ttft_p95_s")):
        found = quantile_in_bucket(q, delta.buckets("ttft_bucket")) if delta is not None else None
        figures[figure] = None
        if found is not None and math.isfinite(found[0]):
            figures[figure] = found[0]
            note_bucket(figure, *found, notes, figures["quantile_bounds"])
    return figures


def note_bucket(
    figure: str, value: float, lower: float, upper: float, notes: dict[str, str], bounds: dict
) -> None:
    """When the bucket holding a quantile (the first, the +Inf one, or one wider than the value) says more
    than its value: the bounds and why."""
    if not (lower == 0 or math.isinf(upper) or (upper - lower) > abs(value)):
        return
    bounds[figure] = (lower, None if math.isinf(upper) else upper)  # None: the +Inf bucket
    if math.isinf(upper):
        notes[figure] = f"above the highest bucket bound ({fmt_bound(lower)}): at least {fmt_bound(lower)}"
    elif lower == 0:
        notes[figure] = (
            f"inside the first bucket (≤ {fmt_bound(upper)}): below {fmt_bound(upper)}, interpolated"
        )
    else:
        notes[figure] = f"inside one wide bucket ({fmt_bound(lower)} to {fmt_bound(upper)}): interpolated"


def per_position(delta: Delta | None, quantity: str, drafts: float | None) -> list[float] | None:
    """Δaccepted_per_pos{position=i} / Δdrafts, position 0 first; None without the family."""
    if delta is None or drafts is None or drafts <= 0:
        return None
    split = delta.split(quantity).items()
    positions = sorted((n, value) for text, value in split if (n := int_or_none(text)) is not None)
    if not positions:
        return None
    size = positions[-1][0] + 1
    if positions[0][0] < 0 or size > 64:
        return None
    values = [0.0] * size
    for position, value in positions:
        values[position] = value / drafts
    return values


def int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def speculation(delta: Delta | None) -> tuple[float | None, float | None, list[float] | None]:
    """(acceptance rate, mean acceptance length with the bonus token, per-position acceptance)."""
    if delta is None:
        return None, None, None
    drafts, accepted = delta.total("drafts"), delta.total("accepted")
    length = ratio(accepted, drafts)
    return (
        ratio(accepted, delta.total("draft_tokens")),
        None if length is None else 1.0 + length,
        per_position(delta, "accepted_per_pos", drafts),
    )
