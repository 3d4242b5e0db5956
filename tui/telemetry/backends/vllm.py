"""vLLM: metric names (current V1, renamed and removed ones, V0) and figure derivation. Servers with only
per-step latency histograms get TPOT as step time / the tokens those steps produced (several per step)."""

from __future__ import annotations

from collections.abc import Iterable

from tui.format import fmt_length
from tui.telemetry.backends.base import (
    Delta,
    Kind,
    Metric,
    MetricTable,
    PageSnapshot,
    SeriesMemo,
    histogram,
    histogram_figures,
    mean,
    rate,
    ratio,
    speculation,
)
from tui.telemetry.backends.base import extract as extract_table
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import Sample

NAME = "vllm"
PREFIX = "vllm:"

TABLE: MetricTable = {
    "vllm:generation_tokens_total": Metric(Kind.COUNTER, "generation_tokens"),
    "vllm:prompt_tokens_total": Metric(Kind.COUNTER, "prompt_tokens"),
    "vllm:request_success_total": Metric(Kind.COUNTER, "requests"),
    "vllm:spec_decode_num_drafts_total": Metric(Kind.COUNTER, "drafts"),
    "vllm:spec_decode_num_draft_tokens_total": Metric(Kind.COUNTER, "draft_tokens"),
    "vllm:spec_decode_num_accepted_tokens_total": Metric(Kind.COUNTER, "accepted"),
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": Metric(
        Kind.COUNTER, "accepted_per_pos", split_label="position"
    ),
    "vllm:prefix_cache_queries_total": Metric(Kind.COUNTER, "prefix_queries"),
    "vllm:prefix_cache_hits_total": Metric(Kind.COUNTER, "prefix_hits"),
    # Deprecated 0.9.2, removed about 0.12 (counted blocks before 0.9.2; the ratio is still a hit rate).
    "vllm:gpu_prefix_cache_queries_total": Metric(Kind.COUNTER, "old_prefix_queries"),
    "vllm:gpu_prefix_cache_hits_total": Metric(Kind.COUNTER, "old_prefix_hits"),
    **histogram("vllm:time_to_first_token_seconds", "ttft"),
    **histogram("vllm:request_time_per_output_token_seconds", "request_tpot"),
    **histogram("vllm:inter_token_latency_seconds", "step_latency"),
    # Removed about 0.15; same per-step meaning as inter_token_latency_seconds.
    **histogram("vllm:time_per_output_token_seconds", "old_step_latency"),
    **histogram("vllm:e2e_request_latency_seconds", "e2e"),
    **histogram("vllm:request_prompt_tokens", "prompt_len"),
    "vllm:num_requests_running": Metric(Kind.GAUGE_SUM, "running"),
    "vllm:num_requests_waiting": Metric(Kind.GAUGE_SUM, "waiting"),
    "vllm:kv_cache_usage_perc": Metric(Kind.GAUGE_MEAN, "kv_cache_usage"),  # a 0..1 fraction
    "vllm:gpu_cache_usage_perc": Metric(Kind.GAUGE_MEAN, "old_kv_cache_usage"),
    # V0 engine (removed 2025-10): lifetime gauges, used only when no counter says more.
    "vllm:spec_decode_draft_acceptance_rate": Metric(Kind.GAUGE_MEAN, "v0_acceptance_rate"),
    "vllm:gpu_prefix_cache_hit_rate": Metric(Kind.GAUGE_MEAN, "v0_prefix_hit_rate"),
}

_RESTART_NAMES = ("process_start_time_seconds", "vllm:generation_tokens_created")
_SPEC_FIGURES = ("acceptance_rate", "mean_acceptance_length", "per_position_acceptance")
SPEC_OFF = "speculative decoding is off: vLLM exports spec_decode counters only with --speculative-config"
NO_DRAFTS_COUNTER = "this vLLM has no spec_decode_num_drafts counter (V0, or V1 before 2025-04-24)"
V0_GAUGE = "lifetime: the V0 engine's own gauge, not this window (the page has no counter for it)"


def extract(samples: Iterable[Sample], memo: SeriesMemo | None = None) -> PageSnapshot:
    return extract_table(samples, TABLE, memo=memo, restart_names=_RESTART_NAMES)


def _tpot(delta: Delta | None) -> float | None:
    per_request = mean(delta, "request_tpot")
    if per_request is not None or delta is None:
        return per_request
    step_sum = delta.total("step_latency_sum")
    if step_sum is None:
        step_sum = delta.total("old_step_latency_sum")
    tokens = delta.total("generation_tokens")
    if step_sum is None or tokens is None:
        return None
    first_tokens = delta.total("ttft_count") or 0.0
    return ratio(step_sum, tokens - first_tokens)


def _spec_notes(last: PageSnapshot, notes: dict[str, str]) -> None:
    """Why the speculative figures are unknown when the page itself says so."""
    quantities = {key[0] for key in last.counters}
    if not quantities & {"draft_tokens", "accepted", "drafts"} and "v0_acceptance_rate" not in last.gauges:
        notes.update(dict.fromkeys(_SPEC_FIGURES, SPEC_OFF))
    elif "drafts" not in quantities:
        notes["mean_acceptance_length"] = notes["per_position_acceptance"] = NO_DRAFTS_COUNTER


MIXED = (
    "mixed: steps drafted {k} tokens on average of {configured} positions (a per-batch-size table); "
    "a position's rate would count steps that never drafted it"
)


def _variable_k(figures: Figures, positions: list[float] | None, delta: Delta | None) -> Figures:
    """k in effect: draft tokens per verify step over the window; configured: the positions on the page."""
    k = None if delta is None else ratio(delta.total("draft_tokens"), delta.total("drafts"))
    configured = len(positions) if positions else None
    figures.k_in_effect, figures.k_configured = k, configured
    figures.k_in_effect_derived = k is not None
    if k is not None and configured is not None and abs(k - configured) > 0.005:
        figures.per_position_acceptance = None
        figures.per_position_mixed = True
        figures.notes["per_position_acceptance"] = MIXED.format(k=fmt_length(k), configured=configured)
    return figures


def derive(delta: Delta | None, last: PageSnapshot) -> Figures:
    notes: dict[str, str] = {}
    _spec_notes(last, notes)
    acceptance_rate, mean_length, positions = speculation(delta)
    if acceptance_rate is None and (delta is None or delta.total("draft_tokens") is None):
        acceptance_rate = last.gauges.get("v0_acceptance_rate")
        if acceptance_rate is not None:
            notes["acceptance_rate"] = V0_GAUGE
    new_queries = None if delta is None else delta.total("prefix_queries")
    prefix_hit_rate = None
    if delta is not None:
        prefix = "prefix" if new_queries is not None else "old_prefix"
        prefix_hit_rate = ratio(delta.total(f"{prefix}_hits"), delta.total(f"{prefix}_queries"))
    if prefix_hit_rate is None and new_queries is None:
        prefix_hit_rate = last.gauges.get("v0_prefix_hit_rate")
        if prefix_hit_rate is not None:
            notes["prefix_cache_hit_rate"] = V0_GAUGE
    kv_cache_usage = last.gauges.get("kv_cache_usage", last.gauges.get("old_kv_cache_usage"))
    figures = Figures(
        **histogram_figures(delta, last, notes),
        generation_tokens_per_s=rate(delta, "generation_tokens"),
        prompt_tokens_per_s=rate(delta, "prompt_tokens"),
        requests_per_s=rate(delta, "requests"),
        acceptance_rate=acceptance_rate,
        mean_acceptance_length=mean_length,
        per_position_acceptance=positions,
        tpot_mean_s=_tpot(delta),
        kv_cache_usage=kv_cache_usage,
        prefix_cache_hit_rate=prefix_hit_rate,
    )
    return _variable_k(figures, positions, delta)
