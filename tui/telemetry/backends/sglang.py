"""SGLang: metric names and figure derivation. The page merges every process: the lowest `tp_rank` of a
series is kept, DP ranks summed, and with priority scheduling only the `priority=""` totals read."""

from __future__ import annotations

from collections.abc import Iterable

from tui.telemetry.backends.base import (
    Delta,
    Kind,
    Metric,
    MetricTable,
    PageSnapshot,
    SeriesMemo,
    histogram,
    histogram_figures,
    int_or_none,
    mean,
    rate,
    ratio,
)
from tui.telemetry.backends.base import extract as extract_table
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import Sample

NAME = "sglang"
PREFIX = "sglang:"

TABLE: MetricTable = {
    "sglang:realtime_tokens_total": Metric(Kind.COUNTER, "realtime", split_label="mode"),
    "sglang:generation_tokens_total": Metric(Kind.COUNTER, "generation_tokens"),
    "sglang:prompt_tokens_total": Metric(Kind.COUNTER, "prompt_tokens"),
    "sglang:spec_verify_calls_total": Metric(Kind.COUNTER, "verify_calls"),
    "sglang:num_requests_total": Metric(Kind.COUNTER, "requests"),
    "sglang:cached_tokens_total": Metric(Kind.COUNTER, "cached", split_label="cache_source"),
    **histogram("sglang:time_to_first_token_seconds", "ttft"),
    # Per token: a chunk of k tokens adds its interval to _sum and k to _count.
    **histogram("sglang:inter_token_latency_seconds", "itl"),
    # Removed 2025-03; the older name of the per-token histogram.
    **histogram("sglang:time_per_output_token_seconds", "old_tpot"),
    **histogram("sglang:e2e_request_latency_seconds", "e2e"),
    **histogram("sglang:prompt_tokens_histogram", "prompt_len"),
    "sglang:num_running_reqs": Metric(Kind.GAUGE_SUM, "running"),
    "sglang:num_queue_reqs": Metric(Kind.GAUGE_SUM, "waiting"),
    "sglang:token_usage": Metric(Kind.GAUGE_MEAN, "token_usage"),
    "sglang:full_token_usage": Metric(Kind.GAUGE_MEAN, "full_token_usage"),
    "sglang:swa_token_usage": Metric(Kind.GAUGE_MEAN, "swa_token_usage"),
    "sglang:mamba_usage": Metric(Kind.GAUGE_MEAN, "mamba_usage"),
    "sglang:kv_used_tokens": Metric(Kind.GAUGE_SUM, "kv_used_tokens"),
    "sglang:max_total_num_tokens": Metric(Kind.GAUGE_SUM, "max_total_num_tokens"),
    "sglang:spec_accept_length": Metric(Kind.GAUGE_MEAN, "spec_accept_length"),
    "sglang:spec_accept_rate": Metric(Kind.GAUGE_MEAN, "spec_accept_rate"),
    "sglang:spec_num_draft_tokens": Metric(Kind.GAUGE_MEAN, "spec_num_draft_tokens"),
    # The steps in use: under --speculative-adaptive the tier the server switched to (since 2026-06-01).
    "sglang:spec_num_steps": Metric(Kind.GAUGE_MEAN, "spec_num_steps"),
}

_RANK_LABELS = frozenset({"tp_rank", "moe_ep_rank", "pid"})


_Identity = tuple[str, tuple[tuple[str, str], ...]]


def _identity(sample: Sample, rank_text: str, memo: SeriesMemo) -> tuple[_Identity, int]:
    if (known := memo.identities.get(sample.series)) is None:
        labels = tuple(sorted(item for item in sample.labels.items() if item[0] not in _RANK_LABELS))
        rank = int_or_none(rank_text)
        known = memo.identities[sample.series] = ((sample.name, labels), 1 << 30 if rank is None else rank)
    return known


def keep_first_tp_rank(
    selected: list[tuple[Sample, Metric]], memo: SeriesMemo
) -> list[tuple[Sample, Metric]]:
    """Drop copies of a series from TP ranks other than the lowest (and per-priority parts)."""
    if with_total := {sample.name for sample, _ in selected if sample.labels.get("priority") == ""}:
        selected = [
            pair
            for pair in selected
            if pair[0].name not in with_total or not pair[0].labels.get("priority", "")
        ]
    lowest: dict[_Identity, int] = {}
    ranked: list[tuple[_Identity, int] | None] = []
    for sample, _ in selected:
        rank_text = sample.labels.get("tp_rank")
        if rank_text is None:
            ranked.append(None)
            continue
        identity, rank = _identity(sample, rank_text, memo)
        ranked.append((identity, rank))
        if rank < lowest.get(identity, 1 << 31):
            lowest[identity] = rank
    return [
        pair
        for pair, entry in zip(selected, ranked, strict=True)
        if entry is None or entry[1] == lowest[entry[0]]
    ]


def extract(samples: Iterable[Sample], memo: SeriesMemo | None = None) -> PageSnapshot:
    return extract_table(
        samples, TABLE, memo=memo, keep=keep_first_tp_rank, restart_names=("process_start_time_seconds",)
    )


def _spec_gauges_live(last: PageSnapshot) -> bool:
    """The spec gauges go stale while nothing runs."""
    return (last.gauges.get("running") or 0) > 0


# Pages older than spec_num_draft_tokens (2026-06-01) may predate the current definition of the gauge.
GAUGE_DEFINITION = (
    "as the server prints it: before 2026-04-28 SGLang counted the bonus token "
    "(accept len / draft tokens), since then (accept len - 1) / (draft tokens - 1)"
)


def _acceptance(
    delta: Delta | None, last: PageSnapshot, notes: dict[str, str]
) -> tuple[float | None, float | None]:
    length = None if delta is None else ratio(delta.total("generation_tokens"), delta.total("verify_calls"))
    if length is not None:
        draft_tokens = last.gauges.get("spec_num_draft_tokens")
        acceptance = None
        if draft_tokens is not None and draft_tokens > 1:
            acceptance = min(1.0, max(0.0, (length - 1.0) / (draft_tokens - 1.0)))
        elif _spec_gauges_live(last):
            acceptance = last.gauges.get("spec_accept_rate")
        return acceptance, length
    if not _spec_gauges_live(last):
        return None, None
    gauge_length = last.gauges.get("spec_accept_length")
    if gauge_length is None or gauge_length <= 0:
        return None, None  # 0 means speculative decoding is off
    gauge_rate = last.gauges.get("spec_accept_rate")
    if gauge_rate is not None and "spec_num_draft_tokens" not in last.gauges:
        notes["acceptance_rate"] = GAUGE_DEFINITION
    return gauge_rate, gauge_length


def _prefix_hit_rate(delta: Delta | None) -> float | None:
    if delta is None:
        return None
    by_source = delta.split("cached")
    sources = {key: value for key, value in by_source.items() if key != "total"} or by_source
    hit_rate = ratio(sum(sources.values()), delta.total("prompt_tokens")) if sources else None
    cache, compute = delta.total("realtime:prefill_cache"), delta.total("realtime:prefill_compute")
    if hit_rate is None and cache is not None and compute is not None:
        hit_rate = ratio(cache, cache + compute)
    return None if hit_rate is None else min(1.0, hit_rate)


_POOLS = ("full_token_usage", "swa_token_usage", "mamba_usage")


def _kv_cache_usage(last: PageSnapshot) -> float | None:
    gauges = last.gauges
    if pools := [gauges[name] for name in _POOLS if name in gauges]:
        return max(pools)
    return gauges.get("token_usage", ratio(gauges.get("kv_used_tokens"), gauges.get("max_total_num_tokens")))


# Servers before realtime_tokens_total (2025-12-24) count tokens only when a request finishes.
FINISHED_ONLY = "from finished requests only (this SGLang has no realtime_tokens_total: lumpy)"


def _generation_rate(delta: Delta | None, notes: dict[str, str]) -> float | None:
    if delta is None:
        return None
    if delta.total("realtime:decode") is not None:
        return rate(delta, "realtime:decode")
    value = rate(delta, "generation_tokens")
    if value is not None:
        notes["generation_tokens_per_s"] = FINISHED_ONLY
    return value


def _prompt_rate(delta: Delta | None, notes: dict[str, str]) -> float | None:
    if delta is None:
        return None
    compute = delta.total("realtime:prefill_compute")
    if compute is not None:
        return ratio(compute + (delta.total("realtime:prefill_cache") or 0.0), delta.seconds)
    value = rate(delta, "prompt_tokens")
    if value is not None:
        notes["prompt_tokens_per_s"] = FINISHED_ONLY
    return value


def _steps_in_effect(last: PageSnapshot) -> float | None:
    """The draft steps in use (the adaptive tier); None while nothing runs or without the gauge."""
    steps = last.gauges.get("spec_num_steps")
    return steps if _spec_gauges_live(last) and steps is not None and steps > 0 else None


def derive(delta: Delta | None, last: PageSnapshot) -> Figures:
    notes: dict[str, str] = {}
    acceptance_rate, mean_length = _acceptance(delta, last, notes)
    tpot = mean(delta, "itl")
    if tpot is None and (delta is None or delta.total("itl_count") is None):
        tpot = mean(delta, "old_tpot")
    generation_rate, prompt_rate = _generation_rate(delta, notes), _prompt_rate(delta, notes)
    return Figures(
        **histogram_figures(delta, last, notes),
        generation_tokens_per_s=generation_rate,
        prompt_tokens_per_s=prompt_rate,
        requests_per_s=rate(delta, "requests"),
        acceptance_rate=acceptance_rate,
        mean_acceptance_length=mean_length,
        per_position_acceptance=None,  # SGLang exposes no per-position figures
        tpot_mean_s=tpot,
        kv_cache_usage=_kv_cache_usage(last),
        prefix_cache_hit_rate=_prefix_hit_rate(delta),
        k_in_effect=_steps_in_effect(last),
    )
