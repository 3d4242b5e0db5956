"""Burst summaries (typed), the verdict line, and JSON / CSV / Markdown / plain-text renderings.

A summary's JSON (`BurstSummary.model_dump(mode="json")`) is the head of the JSON export:
{"a": ARM, "b": ARM|None, "comparison": ..., "equivalence": ..., "settings", "started_at", ...}.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, FieldSerializationInfo, field_serializer

from tui.bench import explain
from tui.bench.burst_options import arms_differ_by, parse_slo
from tui.bench.equivalence import Equivalence, compare_outputs
from tui.bench.results import ERROR_KINDS, ArmResult, BurstResult, BurstSettingsRecord, RequestResult
from tui.bench.stats import Summary, bootstrap_pooled_ratio_ci, pooled_rate, summarize
from tui.format import (
    UNKNOWN,
    fmt_count,
    fmt_latency,
    fmt_latency_delta,
    fmt_length,
    fmt_per_s,
    fmt_rate,
    fmt_times,
    fmt_times_interval,
    fmt_tokens_per_s,
)
from tui.gpu.history import energy_ratio_text
from tui.gpu.records import ArmGpuRecord
from tui.sanitize import json_safe, safe_line

CSV_FIELDS = (
    "arm", "name", "index", "round", "prompt_id", "ok", "error_kind", "http_status", "attempts",
    "scheduled_s", "sent_s", "send_lag_s", "ttft_s", "e2e_s", "output_tokens", "usage_estimated",
    "chunks", "tokens_per_chunk", "tpot_s", "chunk_gap_s", "decode_tokens_per_s", "finish_reason", "error",
    "category", "server_drafted", "server_accepted", "server_acceptance", "server_mean_length",
    "cached_tokens", "prompt_tokens", "server_ttft_ms", "queue_ms",
)  # fmt: skip
DEFAULT_QS = (50.0, 90.0, 99.0)


def aggregate_tokens_per_s(arm: ArmResult) -> float | None:
    tokens = sum(r.output_tokens or 0 for r in arm.requests if r.ok)
    if not tokens or not arm.active_s:
        return None
    return tokens / arm.active_s


def tokens_per_chunk(arm: ArmResult) -> float | None:
    ok = [r for r in arm.requests if r.ok and r.output_tokens is not None and r.chunk_times_s]
    chunks = sum(len(r.chunk_times_s) for r in ok)
    return sum(r.output_tokens or 0 for r in ok) / chunks if chunks else None


def _request_detail(result: RequestResult, mode: Literal["json", "python"] | str) -> dict[str, Any]:
    detail = result.model_dump(mode=mode, exclude={"text"})
    detail["text_chars"] = len(result.text)
    return detail


class DecodeRate(BaseModel):
    model_config = ConfigDict(frozen=True)

    mean: float | None = None
    p50: float | None = None


class ArmExplain(BaseModel):
    """What explains an arm's figures: the servers' per-request figures, SLOs, cache, /metrics."""

    model_config = ConfigDict(frozen=True)

    acceptance: explain.AcceptanceFigures
    categories: list[explain.CategoryRow]
    outliers: list[explain.Outlier]
    timing: explain.TimingFigures
    cache: explain.CacheFigures
    reconciliation: explain.Reconciliation | None = None
    goodput: explain.Goodput | None = None
    slo: str | None = None
    percentiles: dict[str, dict[str, float | None]] = {}  # "ttft_s" -> {"99.9": value}
    request_throughput: float | None = None  # successful requests/s of the arm's active time
    decode_tokens_per_s_pooled: float | None = None  # Σ(tokens - 1) / Σ decode time: the verdict's figure
    notes: list[str] = []


def request_figures(result: RequestResult) -> explain.RequestFigures:
    server = result.server
    return explain.RequestFigures(
        ok=result.ok,
        round=result.round,
        prompt_id=result.prompt_id,
        category=result.category,
        snippet=result.prompt_snippet,
        drafted=server.drafted if server else None,
        accepted=server.accepted if server else None,
        spec_steps=server.spec_steps if server else None,
        spec_tokens=server.spec_tokens if server else None,
        histogram=server.acceptance_histogram if server else None,
        cached_tokens=server.cached_tokens if server else None,
        prompt_tokens=(server.prompt_tokens if server else None) or result.prompt_tokens,
        client_ttft_s=result.ttft_s,
        server_ttft_ms=server.server_ttft_ms if server else None,
        queue_ms=server.queue_ms if server else None,
        e2e_s=result.e2e_s,
        tpot_s=result.tpot_s,
        decode=result.decode_sample(),
    )


def arm_explain(
    arm: ArmResult, settings: BurstSettingsRecord, shared_with: ArmResult | None = None
) -> ArmExplain:
    """`shared_with`: the other arm, when both read the same /metrics (its requests count there too)."""
    figures = [request_figures(r) for r in arm.requests]
    server = arm.server
    reconciliation = None
    if server.note != "metrics scraping off":
        other = [request_figures(r) for r in shared_with.requests] if shared_with else []
        failed = sum(1 for r in [*arm.requests, *(shared_with.requests if shared_with else [])] if not r.ok)
        reconciliation = explain.reconcile(
            figures,
            server.draft_tokens,
            server.accepted_tokens,
            shared_with=other,
            incomplete=f"{failed} failed requests" if failed else None,
            server_steps=server.verify_steps,
        )
    slo = parse_slo(settings.slo) if settings.slo else None
    qs = tuple(settings.percentiles or DEFAULT_QS)
    ok = [r for r in arm.requests if r.ok]
    percentiles = {
        name: {f"{q:g}": value for q, value in explain.percentiles(values, qs).items()}
        for name, values in (
            ("ttft_s", [r.ttft_s for r in ok]),
            ("tpot_s", [r.tpot_s for r in ok]),
            ("e2e_s", [r.e2e_s for r in ok]),
        )
    }
    samples = [sample for r in ok if (sample := r.decode_sample())]
    return ArmExplain(
        acceptance=explain.acceptance(figures),
        categories=explain.categories(figures),
        outliers=explain.outliers(figures),
        timing=explain.timing(figures),
        cache=explain.cache(figures),
        reconciliation=reconciliation,
        goodput=explain.goodput(figures, slo, arm.active_s) if slo else None,
        slo=slo.describe() if slo else None,
        percentiles=percentiles,
        request_throughput=explain.request_throughput(figures, arm.active_s),
        decode_tokens_per_s_pooled=pooled_rate(samples),
        notes=list(arm.notes),
    )


class ArmSummary(BaseModel):
    """One arm's figures; None where the burst could not know them (never 0)."""

    model_config = ConfigDict(frozen=True)

    name: str
    url: str
    model: str | None
    requests: int
    errors: int
    errors_by_kind: dict[str, int]
    retries: int
    retried_requests: int
    ttft_s: Summary
    tpot_s: Summary
    chunk_gap_s: Summary
    e2e_s: Summary
    decode_tokens_per_s: DecodeRate
    output_tokens_per_s: float | None
    tokens_per_chunk: float | None
    send_lag_s: Summary
    usage_estimated: bool
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    acceptance_note: str | None
    explain: ArmExplain | None = None
    # The arm's GPUs (tui/gpu/burst.py), None when not watched or unknown (`gpu.note` says why).
    energy_j: float | None = None
    energy_per_token_j: float | None = None
    tokens_per_joule: float | None = None
    throttled: bool | None = None
    gpu: ArmGpuRecord | None = None
    requests_detail: tuple[RequestResult, ...] | None = None  # every request (without text), for JSON

    @field_serializer("requests_detail")
    def _dump_detail(
        self, requests: tuple[RequestResult, ...] | None, info: FieldSerializationInfo
    ) -> list[dict[str, Any]] | None:
        return None if requests is None else [_request_detail(r, info.mode) for r in requests]


def arm_summary(
    arm: ArmResult,
    *,
    with_detail: bool = True,
    settings: BurstSettingsRecord | None = None,
    shared_with: ArmResult | None = None,
) -> ArmSummary:
    ok = [r for r in arm.requests if r.ok]
    decode = summarize([r.decode_tokens_per_s for r in ok])
    errors_by_kind = {kind: sum(1 for r in arm.requests if r.error_kind == kind) for kind in ERROR_KINDS}
    return ArmSummary(
        name=arm.name,
        url=arm.url,
        model=arm.model,
        requests=len(arm.requests),
        errors=len(arm.requests) - len(ok),
        errors_by_kind={kind: count for kind, count in errors_by_kind.items() if count},
        retries=sum(r.attempts - 1 for r in arm.requests),
        retried_requests=sum(1 for r in arm.requests if r.attempts > 1),
        ttft_s=summarize([r.ttft_s for r in ok]),
        tpot_s=summarize([r.tpot_s for r in ok]),
        chunk_gap_s=summarize([r.chunk_gap_s for r in ok]),
        e2e_s=summarize([r.e2e_s for r in ok]),
        decode_tokens_per_s=DecodeRate(mean=decode.mean, p50=decode.p50),
        output_tokens_per_s=aggregate_tokens_per_s(arm),
        tokens_per_chunk=tokens_per_chunk(arm),
        send_lag_s=summarize([r.send_lag_s for r in arm.requests]),
        usage_estimated=any(r.usage_estimated for r in ok),
        acceptance_rate=arm.server.acceptance_rate,
        mean_acceptance_length=arm.server.mean_acceptance_length,
        acceptance_note=arm.server.note,
        explain=arm_explain(arm, settings, shared_with) if settings is not None else None,
        **_gpu_fields(arm.gpu),
        requests_detail=tuple(arm.requests) if with_detail else None,
    )


def _paired_samples(
    a: ArmResult, b: ArmResult
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]] | None:
    b_samples = {r.index: (r.prompt_id, r.decode_sample()) for r in b.requests}
    left, right = [], []
    for result in a.requests:
        other = b_samples.get(result.index)
        sample = result.decode_sample()
        if other and other[0] == result.prompt_id and sample and other[1]:
            left.append(sample)
            right.append(other[1])
    return (left, right) if len(left) >= 2 else None


def _gpu_fields(gpu: ArmGpuRecord | None) -> dict[str, Any]:
    if gpu is None:
        return {}
    return {
        "energy_j": gpu.energy_j,
        "energy_per_token_j": gpu.energy_per_token_j,
        "tokens_per_joule": gpu.tokens_per_joule,
        "throttled": gpu.throttled,
        "gpu": gpu,
    }


def energy_words(a: ArmResult, b: ArmResult) -> str | None:
    """The verdict's energy clause, B against A ("uses 0.6x the energy per token"), when both are known."""
    a_jpt = a.gpu.energy_per_token_j if a.gpu else None
    b_jpt = b.gpu.energy_per_token_j if b.gpu else None
    return energy_ratio_text(b_jpt, a_jpt)


def verdict_text(
    ratio: float | None,
    ci: tuple[float, float] | None,
    ttft_delta_s: float | None,
    acceptance: str | None,
    ttft_caveat: str | None = None,
) -> str:
    if ratio is None:
        return "no comparison: an arm has no successful request with 2+ tokens"
    tail = f", TTFT {fmt_latency_delta(ttft_delta_s)}"
    if ttft_caveat:
        tail += f" ({ttft_caveat})"
    if acceptance:
        tail += f", {acceptance}"
    if ci is None:
        return f"B/A {fmt_times(ratio)} (too few requests for a confidence interval){tail}"
    interval = f"95% CI {fmt_times_interval(ci)}"
    if ci[0] <= 1.0 <= ci[1]:
        return f"no significant difference (B/A {fmt_times(ratio)}, {interval}){tail}"
    if ratio >= 1.0:
        return f"B is {fmt_times(ratio)} faster ({interval}){tail}"
    return f"B is {fmt_times(1 / ratio)} slower ({fmt_times(ratio)}, {interval}){tail}"


def _acceptance_words(a: ArmResult, b: ArmResult) -> str | None:
    """Both arms' server acceptance, A → B ("–" for an arm whose server did not say)."""
    rates = (a.server.acceptance_rate, b.server.acceptance_rate)
    if all(rate is None for rate in rates):
        return None
    return "acceptance " + " → ".join(fmt_rate(rate) for rate in rates)


class Comparison(BaseModel):
    """B against A: the pooled decode-rate ratio with its bootstrap 95% CI, and the verdict line."""

    model_config = ConfigDict(frozen=True)

    decode_tokens_per_s_ratio: float | None
    ci95: tuple[float, float] | None  # rounds and requests resampled (requests only with one round)
    throughput_ratio: float | None
    ttft_p50_delta_s: float | None
    verdict: str
    ci95_within_burst: tuple[float, float] | None = None  # requests only: this burst's rounds as they ran
    round_ratios: list[float | None] = []
    warnings: list[str] = []  # what the verdict must be read with (cache state, rounds, schedule)
    arms_differ_by: str | None = None


def _round_samples(arm: ArmResult) -> list[tuple[int, tuple[float, float]]]:
    ordered = sorted(arm.requests, key=lambda r: r.index)
    return [(r.round, sample) for r in ordered if (sample := r.decode_sample())]


def _cache_caveat(a: ArmResult, b: ArmResult) -> tuple[str | None, str | None]:
    """(a short TTFT caveat for the verdict, the warning line) when the arms' caches differ."""
    cache_a = explain.cache([request_figures(r) for r in a.requests])
    cache_b = explain.cache([request_figures(r) for r in b.requests])
    warning = explain.cache_warning(cache_a, cache_b)
    if warning is None or cache_a.share is None or cache_b.share is None:
        return None, None
    shares = f"A {fmt_rate(cache_a.share)} / B {fmt_rate(cache_b.share)}"
    caveat = f"prompt cached {shares}: cache state, not speculation"
    return caveat, warning


def comparison(
    a: ArmResult, b: ArmResult, *, seed: int = 0, settings: BurstSettingsRecord | None = None
) -> Comparison:
    # Pooled decode rate, Σ(tokens - 1) / Σ(e2e - TTFT) per arm: a ratio of per-request means
    # lets one stream read all at once (near-zero decode time) swing the verdict.
    a_samples = [sample for r in a.requests if (sample := r.decode_sample())]
    b_samples = [sample for r in b.requests if (sample := r.decode_sample())]
    ratio = ci = within = None
    warnings: list[str] = []
    round_ratios: list[float | None] = []
    a_rate, b_rate = pooled_rate(a_samples), pooled_rate(b_samples)
    if a_rate and b_rate:
        ratio = b_rate / a_rate
        paired = _paired_samples(a, b)
        if paired is not None and len(paired[0]) >= 0.8 * min(len(a_samples), len(b_samples)):
            within = bootstrap_pooled_ratio_ci(paired[0], paired[1], paired=True, seed=seed)
        else:
            within = bootstrap_pooled_ratio_ci(a_samples, b_samples, seed=seed)
        ci = within
        rounds = explain.bootstrap_rounds(_round_samples(a), _round_samples(b), seed=seed)
        round_ratios = rounds.round_ratios
        if rounds.rounds >= 2 and rounds.interval is not None:
            ci = rounds.interval  # rounds resampled too: drift between rounds widens it
        elif within is not None:
            warnings.append("one round: the interval is within this burst only")
        warning = rounds.warning()
        if warning:
            warnings.append(warning)
    caveat, cache_warning = _cache_caveat(a, b)
    if cache_warning:
        warnings.append(cache_warning)
    reason = settings.schedule_reason if settings is not None else None
    if settings is not None and settings.schedule == "parallel" and reason and "compete" in reason:
        warnings.append(f"schedule {reason}")
    differ = arms_differ_by(a.url, b.url, dict(a.extra_body), dict(b.extra_body))
    a_throughput, b_throughput = aggregate_tokens_per_s(a), aggregate_tokens_per_s(b)
    throughput_ratio = b_throughput / a_throughput if a_throughput and b_throughput else None
    a_ttft = summarize([r.ttft_s for r in a.requests if r.ok]).p50
    b_ttft = summarize([r.ttft_s for r in b.requests if r.ok]).p50
    ttft_delta = b_ttft - a_ttft if a_ttft is not None and b_ttft is not None else None
    return Comparison(
        decode_tokens_per_s_ratio=ratio,
        ci95=ci,
        throughput_ratio=throughput_ratio,
        ttft_p50_delta_s=ttft_delta,
        verdict=_with_energy(verdict_text(ratio, ci, ttft_delta, _acceptance_words(a, b), caveat), a, b),
        ci95_within_burst=within,
        round_ratios=round_ratios,
        warnings=warnings,
        arms_differ_by=differ,
    )


def _with_energy(verdict: str, a: ArmResult, b: ArmResult) -> str:
    energy = energy_words(a, b)
    return f"{verdict} and {energy}" if energy else verdict


class BurstSummary(BaseModel):
    """What the table, the verdict and the exports show of one burst (or of two compared)."""

    model_config = ConfigDict(frozen=True)

    a: ArmSummary
    b: ArmSummary | None
    comparison: Comparison | None
    equivalence: Equivalence | None  # greedy equivalence: A/B at temperature 0 only
    settings: BurstSettingsRecord
    started_at: datetime
    duration_s: float
    cancelled: bool

    @field_serializer("started_at")
    def _dump_started_at(self, value: datetime) -> str:
        return value.isoformat()

    @property
    def arms(self) -> list[tuple[str, ArmSummary]]:
        return [("a", self.a)] + ([("b", self.b)] if self.b else [])


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


# --- rendering ---------------------------------------------------------------------------------------


Row = tuple[str, Callable[[ArmSummary], Any], Callable[[Any], str]]
TABLE_ROWS: tuple[Row, ...] = (
    ("requests", lambda arm: arm.requests, fmt_count),
    ("errors", lambda arm: arm.errors, fmt_count),
    ("retries", lambda arm: arm.retries, fmt_count),
    ("TTFT mean", lambda arm: arm.ttft_s.mean, fmt_latency),
    ("TTFT p50", lambda arm: arm.ttft_s.p50, fmt_latency),
    ("TTFT p90", lambda arm: arm.ttft_s.p90, fmt_latency),
    ("TTFT p99", lambda arm: arm.ttft_s.p99, fmt_latency),
    ("TPOT (per token) p50", lambda arm: arm.tpot_s.p50, fmt_latency),
    ("chunk gap p50", lambda arm: arm.chunk_gap_s.p50, fmt_latency),
    ("e2e p50", lambda arm: arm.e2e_s.p50, fmt_latency),
    ("decode tok/s mean", lambda arm: arm.decode_tokens_per_s.mean, fmt_tokens_per_s),
    ("decode tok/s p50", lambda arm: arm.decode_tokens_per_s.p50, fmt_tokens_per_s),
    ("output tok/s (all)", lambda arm: arm.output_tokens_per_s, fmt_tokens_per_s),
    ("tokens per chunk", lambda arm: arm.tokens_per_chunk, fmt_length),
    ("send lag p99", lambda arm: arm.send_lag_s.p99, fmt_latency),
    ("acceptance (server)", lambda arm: arm.acceptance_rate, fmt_rate),
    ("mean accept length", lambda arm: arm.mean_acceptance_length, fmt_length),
)


def _x(get: Callable[[ArmExplain], Any]) -> Callable[[ArmSummary], Any]:
    return lambda arm: get(arm.explain) if arm.explain is not None else None


def _spread(value: tuple[float | None, float | None, float | None] | None) -> str:
    if value is None or any(v is None for v in value):
        return UNKNOWN
    return "/".join(fmt_rate(v) for v in value)


def _goodput(value: explain.Goodput | None) -> str:
    if value is None or value.fraction is None:
        return UNKNOWN
    rate = f" {fmt_per_s(value.per_s)}/s" if value.per_s is not None else ""
    return f"{fmt_rate(value.fraction)}{rate}"


def _milliseconds(value: float | None) -> str:
    """A latency the server reports in ms, in the vocabulary's latency words."""
    return fmt_latency(None if value is None else value / 1000)


# Rows from the servers' per-request figures, the SLOs and the cache: shown when an arm has them.
EXPLAIN_ROWS: tuple[Row, ...] = (
    ("decode tok/s pooled", _x(lambda e: e.decode_tokens_per_s_pooled), fmt_tokens_per_s),
    ("requests/s", _x(lambda e: e.request_throughput), fmt_per_s),
    ("goodput (SLO)", _x(lambda e: e.goodput), _goodput),
    ("accept/request pooled", _x(lambda e: e.acceptance.pooled), fmt_rate),
    ("accept/req p10/50/90", _x(lambda e: (e.acceptance.p10, e.acceptance.p50, e.acceptance.p90)), _spread),
    ("accept length/request", _x(lambda e: e.acceptance.mean_length), fmt_length),
    ("TTFT server p50", _x(lambda e: e.timing.server_ttft_p50_ms), _milliseconds),
    ("TTFT client-server p50", _x(lambda e: e.timing.overhead_p50_ms), _milliseconds),
    ("queue (server) p50", _x(lambda e: e.timing.queue_p50_ms), _milliseconds),
    ("prompt cached", _x(lambda e: e.cache.share), fmt_rate),
)
_ALWAYS = frozenset({"decode tok/s pooled", "requests/s"})


def _rows_for(
    summary: BurstSummary, rows: tuple[Row, ...], *, skip_empty: bool
) -> list[tuple[str, str, str]]:
    out = []
    for label, figure, formatter in rows:
        values = [figure(arm) for _, arm in summary.arms]
        if skip_empty and label not in _ALWAYS and all(_empty(value) for value in values):
            continue
        texts = [formatter(value) for value in values]
        out.append((label, texts[0], texts[1] if len(texts) > 1 else ""))
    return out


def _empty(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(item is None for item in value)
    return value is None


def _percentile_rows(summary: BurstSummary) -> tuple[Row, ...]:
    """Rows for --percentiles beyond the table's own p50 / p90 / p99."""
    qs = [q for q in summary.settings.percentiles or () if q not in DEFAULT_QS]
    rows: list[Row] = []

    def getter(key: str, q: float) -> Callable[[ArmExplain], float | None]:
        return lambda e: e.percentiles.get(key, {}).get(f"{q:g}")

    for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("e2e", "e2e_s")):
        rows += [(f"{name} p{q:g}", _x(getter(key, q)), fmt_latency) for q in qs]
    return tuple(rows)


def _gpu(spec: str, unit: str = "") -> Callable[[float | None], str]:
    """GPU energy figures (joules, tokens per joule): not in the live vocabulary, "–" when unknown."""
    return lambda value: UNKNOWN if value is None else f"{value:{spec}}{unit}"


GPU_ROWS: tuple[Row, ...] = (  # shown when an arm's GPUs were watched
    ("GPU energy", lambda arm: arm.energy_j, _gpu(".0f", " J")),
    ("energy per token", lambda arm: arm.energy_per_token_j, _gpu(".3g", " J")),
    ("tokens per joule", lambda arm: arm.tokens_per_joule, _gpu(".3g")),
    ("clocks throttled", lambda arm: arm.throttled, lambda v: UNKNOWN if v is None else "yes" if v else "no"),
)


def table_rows(summary: BurstSummary) -> list[tuple[str, str, str]]:
    """(figure, A, B) rows; B is "" in a one-arm burst. Rows of per-request server figures that no
    arm has are left out (the notes say why)."""
    rows = _rows_for(summary, TABLE_ROWS, skip_empty=False)
    rows += _rows_for(summary, _percentile_rows(summary), skip_empty=False)
    rows += _rows_for(summary, EXPLAIN_ROWS, skip_empty=True)
    if any(arm.gpu is not None for _, arm in summary.arms):  # shown when an arm's GPUs were watched
        rows += _rows_for(summary, GPU_ROWS, skip_empty=False)
    return rows


def category_rows(summary: BurstSummary) -> list[tuple[str, ...]]:
    """(category, A acceptance, A decode tok/s[, B acceptance, B decode tok/s]) per prompt category."""
    tables = [
        {row.category: row for row in arm.explain.categories} if arm.explain else {}
        for _, arm in summary.arms
    ]
    names = list(dict.fromkeys(name for table in tables for name in table))
    if len(names) < 2 and not any(row.acceptance is not None for t in tables for row in t.values()):
        return []
    out = []
    for name in names:
        cells: list[str] = [name]
        for table in tables:
            row = table.get(name)
            cells += [
                fmt_rate(row.acceptance if row else None),
                fmt_tokens_per_s(row.decode_tokens_per_s if row else None),
            ]
        out.append(tuple(cells))
    return out


def explain_lines(summary: BurstSummary) -> list[str]:
    """Under the table: the schedule, what the arms differ by, warnings, reconciliation, outliers."""
    lines: list[str] = []
    settings, comparison_ = summary.settings, summary.comparison
    if settings.schedule_reason:
        lines.append(f"schedule: {settings.schedule_reason}")
    if comparison_ is not None:
        if comparison_.arms_differ_by:
            lines.append(comparison_.arms_differ_by)
        lines += [f"warning: {warning}" for warning in comparison_.warnings]
    for label, arm in summary.arms:
        extra = arm.explain
        if extra is None:
            continue
        name = label.upper()
        lines += [f"{name}: {note}" for note in extra.notes]
        if extra.acceptance.note and extra.acceptance.note != "no request succeeded":
            lines.append(f"{name}: {extra.acceptance.note}")
        if extra.acceptance.per_position:
            shown = " ".join(fmt_rate(value) for value in extra.acceptance.per_position[:8])
            lines.append(f"{name} acceptance by position (per-request histograms): {shown}")
        if extra.reconciliation is not None and extra.acceptance.requests:
            lines.append(f"{name} /metrics: {extra.reconciliation.message}")
        if extra.goodput is not None and extra.slo:
            lines.append(
                f"{name} SLO {extra.slo}: {extra.goodput.good}/{extra.goodput.requests} requests met all"
            )
        for outlier in extra.outliers[:5]:
            lines.append(f"{name} outlier {outlier.describe()}")
        if len(extra.outliers) > 5:
            lines.append(f"{name}: {len(extra.outliers) - 5} more outliers (see the JSON export)")
    return lines


def explain_block(summary: BurstSummary) -> list[str]:
    """The per-category table and the explanation lines, for a screen's explain view."""
    lines = _category_text(summary)[1:]
    explained = explain_lines(summary)
    if explained:
        lines += ([""] if lines else []) + explained
    return lines


def _category_text(summary: BurstSummary) -> list[str]:
    rows = category_rows(summary)
    if not rows:
        return []
    head = f"{'category':14}{'A accept':>10}{'A tok/s':>10}"
    if summary.b is not None:
        head += f"{'B accept':>10}{'B tok/s':>10}"
    lines = ["", head]
    for row in rows:
        lines.append(f"{row[0][:14]:14}" + "".join(f"{cell:>10}" for cell in row[1:]))
    return lines


def equivalence_line(summary: BurstSummary) -> str | None:
    equivalence = summary.equivalence
    if not equivalence:
        return None
    line = f"greedy equivalence: {equivalence.identical}/{equivalence.compared} identical"
    divergences = equivalence.divergences
    if divergences:
        first = divergences[0]
        token = first.token_position
        where = f"char {first.char_position}" + (f", token {token}" if token is not None else "")
        line += f"; first divergence in {first.prompt_id} at {where}"
    return line


def note_lines(summary: BurstSummary) -> list[str]:
    """Caveats under the table: estimated token counts, errors by kind, missing server figures."""
    lines = []
    arms = summary.arms
    if any(arm.usage_estimated for _, arm in arms):
        lines.append("tokens counted from chunks: the server sent no usage (estimated)")
    for label, arm in arms:
        if arm.errors_by_kind:
            kinds = ", ".join(f"{kind} {count}" for kind, count in arm.errors_by_kind.items())
            lines.append(f"{label.upper()} errors: {kinds}")
    for label, arm in arms:
        if arm.gpu is not None and arm.gpu.throttle_note:
            lines.append(f"WARNING {label.upper()} GPU: {arm.gpu.throttle_note}")
        elif arm.gpu is not None and arm.gpu.note:
            lines.append(f"{label.upper()} GPU: {arm.gpu.note}")
    return lines


def render_text(summary: BurstSummary) -> str:
    """The summary table for a terminal (fits 80 columns)."""
    has_b = summary.b is not None
    header = f"{'':22}{'A':>16}" + (f"{'B':>16}" if has_b else "")
    lines = [header]
    lines.append(f"{'endpoint':22}{_short(summary.a.url):>16}" + (
        f"{_short(summary.b.url):>16}" if summary.b else ""))  # fmt: skip
    for label, a_text, b_text in table_rows(summary):
        lines.append(f"{label:22}{a_text:>16}" + (f"{b_text:>16}" if has_b else ""))
    lines += note_lines(summary)
    if summary.comparison:
        lines.append("")
        lines.append(summary.comparison.verdict)
    equivalence = equivalence_line(summary)
    if equivalence:
        lines.append(equivalence)
    lines += _category_text(summary)
    explained = explain_lines(summary)
    if explained:
        lines += ["", *explained]
    return "\n".join(safe_line(line) for line in lines)


def _short(url: str, width: int = 15) -> str:
    text = url.split("://", 1)[-1]
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def render_markdown(summary: BurstSummary) -> str:
    has_b = summary.b is not None
    lines = ["# spectop burst", ""]
    if summary.started_at:
        lines += [f"Started {summary.started_at.isoformat()}", ""]
    lines.append("| figure | A |" + (" B |" if has_b else ""))
    lines.append("| --- | --- |" + (" --- |" if has_b else ""))
    lines.append(f"| endpoint | {summary.a.url} |" + (f" {summary.b.url} |" if summary.b else ""))
    for label, a_text, b_text in table_rows(summary):
        lines.append(f"| {label} | {a_text} |" + (f" {b_text} |" if has_b else ""))
    categories_ = category_rows(summary)
    if categories_:
        arms = ["A"] + (["B"] if has_b else [])
        lines += ["", "| category | " + " | ".join(f"{arm} accept | {arm} tok/s" for arm in arms) + " |"]
        lines.append("| --- |" + " --- | --- |" * len(arms))
        lines += ["| " + " | ".join(_md_code(cell) for cell in row) + " |" for row in categories_]
    explained = explain_lines(summary)
    if explained:
        lines += [""] + [f"- {_md_code(line)}" for line in explained]
    if summary.comparison:
        lines += ["", f"**Verdict:** {summary.comparison.verdict}"]
    equivalence = equivalence_line(summary)
    if equivalence and summary.equivalence:
        lines += ["", equivalence]
        for item in summary.equivalence.divergences[:20]:
            lines.append(
                f"- `{item.prompt_id}` at char {item.char_position}: "
                f"A `{_md_code(item.a_snippet)}` / B `{_md_code(item.b_snippet)}`"
            )
    return "\n".join(safe_line(line) for line in lines) + "\n"


def _md_code(text: str) -> str:
    return text.replace("`", "'").replace("\n", "⏎").replace("|", "\\|")


def render_csv(result: BurstResult) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS)
    writer.writeheader()
    for arm in result.arms:
        for r in arm.requests:
            writer.writerow(
                {
                    "arm": r.arm, "name": safe_line(arm.name), "index": r.index, "round": r.round,
                    "prompt_id": safe_line(r.prompt_id), "ok": r.ok, "error_kind": r.error_kind or "",
                    "http_status": r.http_status or "", "attempts": r.attempts,
                    "scheduled_s": r.scheduled_s, "sent_s": r.sent_s, "send_lag_s": r.send_lag_s,
                    "ttft_s": _blank(r.ttft_s), "e2e_s": _blank(r.e2e_s),
                    "output_tokens": _blank(r.output_tokens), "usage_estimated": r.usage_estimated,
                    "chunks": len(r.chunk_times_s), "tokens_per_chunk": _blank(r.tokens_per_chunk),
                    "tpot_s": _blank(r.tpot_s), "chunk_gap_s": _blank(r.chunk_gap_s),
                    "decode_tokens_per_s": _blank(r.decode_tokens_per_s),
                    "finish_reason": safe_line(r.finish_reason or ""), "error": safe_line(r.error or ""),
                    **_server_columns(r),
                }
            )  # fmt: skip
    return out.getvalue()


def _server_columns(r: RequestResult) -> dict[str, object]:
    server = r.server
    if server is None:
        return {"category": safe_line(r.category or "")}
    return {
        "category": safe_line(r.category or ""), "server_drafted": _blank(server.drafted),
        "server_accepted": _blank(server.accepted), "server_acceptance": _blank(server.acceptance_rate),
        "server_mean_length": _blank(server.mean_acceptance_length),
        "cached_tokens": _blank(server.cached_tokens), "prompt_tokens": _blank(server.prompt_tokens),
        "server_ttft_ms": _blank(server.server_ttft_ms), "queue_ms": _blank(server.queue_ms),
    }  # fmt: skip


def _blank(value: object) -> object:
    return "" if value is None else value


def render_json(result: BurstResult) -> str:
    """Every request's raw timings (and outputs) plus the summary."""
    payload = burst_summary(result).model_dump(mode="json")
    payload["burst"] = result.model_dump(mode="json")
    return json_safe(json.dumps(payload, ensure_ascii=False, indent=1, default=str))


def export_name(kind: str, when: datetime) -> str:
    extension = {"json": "json", "csv": "csv", "markdown": "md"}[kind]
    return f"spectop-burst-{when.strftime('%Y%m%d-%H%M%S')}.{extension}"


def export(result: BurstResult, kind: str, path: Path) -> Path:
    """Write one export; `kind` is json, csv or markdown. Returns the path written."""
    if kind == "json":
        text = render_json(result)
    elif kind == "csv":
        text = render_csv(result)
    elif kind == "markdown":
        text = render_markdown(burst_summary(result, with_detail=False))
    else:
        raise ValueError(f"unknown export kind {kind!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    return path
