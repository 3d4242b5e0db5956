"""One arm's figures from its requests: rates, latencies, errors, what explains them."""

from __future__ import annotations

from typing import Any

from tui.bench import explain
from tui.bench.burst_options import parse_slo
from tui.bench.report.models import ArmExplain, ArmSummary, DecodeRate
from tui.bench.results import ERROR_KINDS, ArmResult, BurstSettingsRecord, RequestResult
from tui.bench.stats import percentile, pooled_rate, summarize
from tui.gpu.records import ArmGpuRecord
from tui.sanitize import safe_line

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


MAX_ERROR_REASONS = 3
MAX_REASON_CHARS = 160


def error_reasons(arm: ArmResult) -> tuple[tuple[str, int], ...]:
    """The distinct reasons the arm's requests failed, with counts (the most frequent MAX_ERROR_REASONS)."""
    counts: dict[str, int] = {}
    for request in arm.requests:
        if request.ok:
            continue
        reason = safe_line(request.error or request.error_kind or "failed")
        if len(reason) > MAX_REASON_CHARS:
            reason = reason[: MAX_REASON_CHARS - 1] + "…"
        counts[reason] = counts.get(reason, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    return tuple(ranked[:MAX_ERROR_REASONS])


def arm_summary(
    arm: ArmResult,
    *,
    with_detail: bool = True,
    settings: BurstSettingsRecord | None = None,
    shared_with: ArmResult | None = None,
) -> ArmSummary:
    ok = [r for r in arm.requests if r.ok]
    rates = sorted(rate for r in ok if (rate := r.decode_tokens_per_s) is not None)
    samples = [sample for r in ok if (sample := r.decode_sample())]
    errors_by_kind = {kind: sum(1 for r in arm.requests if r.error_kind == kind) for kind in ERROR_KINDS}
    return ArmSummary(
        name=arm.name,
        url=arm.url,
        model=arm.model,
        requests=len(arm.requests),
        errors=len(arm.requests) - len(ok),
        errors_by_kind={kind: count for kind, count in errors_by_kind.items() if count},
        error_reasons=error_reasons(arm),
        retries=sum(r.attempts - 1 for r in arm.requests),
        retried_requests=sum(1 for r in arm.requests if r.attempts > 1),
        ttft_s=summarize([r.ttft_s for r in ok]),
        tpot_s=summarize([r.tpot_s for r in ok]),
        chunk_gap_s=summarize([r.chunk_gap_s for r in ok]),
        e2e_s=summarize([r.e2e_s for r in ok]),
        decode_tokens_per_s=DecodeRate(
            pooled=pooled_rate(samples),
            p10=percentile(rates, 10),
            p50=percentile(rates, 50),
            p90=percentile(rates, 90),
        ),
        output_tokens_per_s=aggregate_tokens_per_s(arm),
        tokens_per_chunk=tokens_per_chunk(arm),
        send_lag_s=summarize([r.send_lag_s for r in arm.requests]),
        usage_estimated=any(r.usage_estimated for r in ok),
        acceptance_rate=arm.server.acceptance_rate,
        mean_acceptance_length=arm.server.mean_acceptance_length,
        acceptance_note=arm.server.note,
        explain=arm_explain(arm, settings, shared_with) if settings is not None else None,
        **_gpu_fields(arm.gpu),
        client_check=arm.client_check,
        requests_detail=tuple(arm.requests) if with_detail else None,
    )


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
