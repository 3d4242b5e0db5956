"""A burst's summary: each arm's figures, B against A (ratio, interval, verdict), greedy equivalence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import accumulate

from tui.bench import explain
from tui.bench.burst_options import arms_differ_by, parse_slo
from tui.bench.report.models import (
    ArmExplain,
    ArmSummary,
    BurstSummary,
    Comparison,
    DecodeRate,
    Divergence,
    Equivalence,
)
from tui.bench.results import (
    ERROR_KINDS,
    ArmResult,
    BurstResult,
    BurstSettingsRecord,
    ClientCheck,
    RequestResult,
)
from tui.bench.stats import bootstrap_pooled_ratio_ci, known, percentile, pooled_rate, summarize
from tui.format import fmt_latency_delta, fmt_level, fmt_rate, fmt_times, fmt_times_interval
from tui.gpu.history import energy_ratio_text
from tui.sanitize import safe_line

DEFAULT_QS = (50.0, 90.0, 99.0)
SNIPPET_BEFORE = 20  # characters shown around where greedy outputs diverge
SNIPPET_AFTER = 40


def aggregate_tokens_per_s(arm: ArmResult) -> float | None:
    tokens = sum(r.output_tokens or 0 for r in arm.requests if r.ok)
    return tokens / arm.active_s if tokens and arm.active_s else None


def tokens_per_chunk(arm: ArmResult) -> float | None:
    ok = [r for r in arm.requests if r.ok and r.output_tokens is not None and r.chunk_times_s]
    chunks = sum(len(r.chunk_times_s) for r in ok)
    return sum(r.output_tokens or 0 for r in ok) / chunks if chunks else None


def request_figures(result: RequestResult) -> explain.RequestFigures:
    server = dict(result.server) if result.server else {}
    return explain.RequestFigures.model_construct(
        **server | {"prompt_tokens": server.get("prompt_tokens") or result.prompt_tokens},
        ok=result.ok,
        round=result.round,
        prompt_id=result.prompt_id,
        category=result.category,
        snippet=result.prompt_snippet,
        client_ttft_s=result.ttft_s,
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
        name: {f"{q:g}": percentile(known([getattr(r, name) for r in ok]), q) for q in qs}
        for name in ("ttft_s", "tpot_s", "e2e_s")
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
GPU_FIELDS = {"energy_j", "energy_per_token_j", "tokens_per_joule", "throttled"}  # ArmSummary's copies


def error_reasons(arm: ArmResult) -> tuple[tuple[str, int], ...]:
    """The distinct reasons the arm's requests failed, with counts (the most frequent MAX_ERROR_REASONS)."""
    reasons = (safe_line(r.error or r.error_kind or "failed") for r in arm.requests if not r.ok)
    counts = Counter(r if len(r) <= MAX_REASON_CHARS else r[: MAX_REASON_CHARS - 1] + "…" for r in reasons)
    return tuple(counts.most_common(MAX_ERROR_REASONS))


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
            pooled=pooled_rate(samples), **{f"p{q}": percentile(rates, q) for q in (10, 50, 90)}
        ),
        output_tokens_per_s=aggregate_tokens_per_s(arm),
        tokens_per_chunk=tokens_per_chunk(arm),
        send_lag_s=summarize([r.send_lag_s for r in arm.requests]),
        usage_estimated=any(r.usage_estimated for r in ok),
        acceptance_rate=arm.server.acceptance_rate,
        mean_acceptance_length=arm.server.mean_acceptance_length,
        acceptance_note=arm.server.note,
        explain=arm_explain(arm, settings, shared_with) if settings is not None else None,
        **({} if arm.gpu is None else arm.gpu.model_dump(include=GPU_FIELDS) | {"gpu": arm.gpu}),
        client_check=arm.client_check,
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


def verdict_text(
    ratio: float | None,
    ci: tuple[float, float] | None,
    ttft_delta_s: float | None,
    acceptance: str | None,
    ttft_caveat: str | None = None,
    *,
    names: tuple[str, str] = ("A", "B"),
    level_words: str = "95% CI",
    unreliable: str | None = None,
) -> str:
    """ "B is 1.80x faster (95% CI 1.70-1.90), ..." or "no significant difference (...)"."""
    first, second = names
    flag = f"UNRELIABLE ({unreliable}): " if unreliable else ""
    if ratio is None:
        return flag + "no comparison: an arm has no successful request with 2+ tokens"
    tail = f", TTFT {fmt_latency_delta(ttft_delta_s)}"
    if ttft_caveat:
        tail += f" ({ttft_caveat})"
    if acceptance:
        tail += f", {acceptance}"
    if ci is None:
        return f"{flag}{second}/{first} {fmt_times(ratio)} (too few requests for a confidence interval){tail}"
    interval = f"{level_words} {fmt_times_interval(ci)}"
    if ci[0] <= 1.0 <= ci[1]:
        return f"{flag}no significant difference ({fmt_times(ratio)}, {interval}){tail}"
    if ratio >= 1.0:
        return f"{flag}{second} is {fmt_times(ratio)} faster ({interval}){tail}"
    return f"{flag}{second} is {fmt_times(1 / ratio)} slower ({fmt_times(ratio)}, {interval}){tail}"


def _acceptance_words(a: ArmResult, b: ArmResult) -> str | None:
    """Both arms' server acceptance, A → B ("–" for an arm whose server did not say)."""
    rates = (a.server.acceptance_rate, b.server.acceptance_rate)
    if all(rate is None for rate in rates):
        return None
    return "acceptance " + " → ".join(fmt_rate(rate) for rate in rates)


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
    a: ArmResult, b: ArmResult, *, settings: BurstSettingsRecord, level: float | None = None
) -> Comparison:
    """`level`: the interval's level (default the settings' `ci_level`, else 95%)."""
    level = level or settings.ci_level or 0.95
    # Pooled: a ratio of per-request means lets one stream read all at once swing the verdict.
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
            within = bootstrap_pooled_ratio_ci(paired[0], paired[1], paired=True, level=level)
        else:
            within = bootstrap_pooled_ratio_ci(a_samples, b_samples, level=level)
        ci = within
        rounds = explain.bootstrap_rounds(_round_samples(a), _round_samples(b), level=level)
        round_ratios = rounds.round_ratios
        if rounds.rounds >= 2 and rounds.interval is not None:
            ci = rounds.interval  # rounds resampled too: drift between rounds widens it
        elif within is not None:
            warnings.append("one round: the interval is within this burst only")
        warning = rounds.warning()
        if warning:
            warnings.append(warning)
    caveat, cache_warning = _cache_caveat(a, b)
    warnings += [cache_warning] if cache_warning else []
    reason = settings.schedule_reason
    if settings.schedule == "parallel" and reason and "compete" in reason:
        warnings.append(f"schedule {reason}")
    before_after = settings.compared == "before_after"
    differ = (
        "before / after: two one-arm bursts measured at different times, not side by side"
        if before_after
        else arms_differ_by(a.url, b.url, dict(a.extra_body), dict(b.extra_body))
    )
    late = [name for name, arm in (("A", a), ("B", b)) if arm.client_check and not arm.client_check.ok]
    unreliable = f"the measuring client fell behind in {' and '.join(late)}" if late else None
    for name, arm in (("A", a), ("B", b)):
        if arm.client_check is not None and arm.client_check.coalesced:
            warnings.append(coalesced_words(name, arm.client_check))
    names = ("before", "after") if before_after else ("A", "B")
    a_throughput, b_throughput = aggregate_tokens_per_s(a), aggregate_tokens_per_s(b)
    throughput_ratio = b_throughput / a_throughput if a_throughput and b_throughput else None
    a_ttft, b_ttft = (summarize([r.ttft_s for r in arm.requests if r.ok]).p50 for arm in (a, b))
    ttft_delta = b_ttft - a_ttft if a_ttft is not None and b_ttft is not None else None
    words = sequential_words(level, settings.looks or 1)
    verdict = verdict_text(
        ratio,
        ci,
        ttft_delta,
        _acceptance_words(a, b),
        caveat,
        names=names,
        level_words=words,
        unreliable=unreliable,
    )
    return Comparison(
        decode_tokens_per_s_ratio=ratio,
        ci95=ci,
        throughput_ratio=throughput_ratio,
        ttft_p50_delta_s=ttft_delta,
        verdict=_with_energy(verdict, a, b),
        ci95_within_burst=within,
        round_ratios=round_ratios,
        warnings=warnings,
        arms_differ_by=differ,
    )


def sequential_words(level: float, looks: int) -> str:
    """ "95% CI", or "99.4% CI (Bonferroni: 95% over 9 looks)" for a burst that looked more than once."""
    percent = fmt_level(level)
    return f"{percent} CI" if looks <= 1 else f"{percent} CI (Bonferroni: 95% over {looks} looks)"


def coalesced_words(name: str, check: ClientCheck) -> str:
    causes = [
        f"{check.coalesced_client} while the client was late" if check.coalesced_client else "",
        f"{check.coalesced_server} buffered by the server" if check.coalesced_server else "",
    ]
    tail = [
        f"{check.server_timed} use the server's own timing" if check.server_timed else "",
        f"{check.left_out} left out of decode figures (no server timing)" if check.left_out else "",
    ]
    said = f"{name}: {check.coalesced} streams coalesced ({', '.join(filter(None, causes))})"
    return "; ".join(filter(None, [said, *tail]))


def _with_energy(verdict: str, a: ArmResult, b: ArmResult) -> str:
    """The verdict and its energy clause, B against A ("uses 0.6x the energy per token"), when known."""
    a_jpt = a.gpu.energy_per_token_j if a.gpu else None
    energy = energy_ratio_text(b.gpu.energy_per_token_j if b.gpu else None, a_jpt)
    return f"{verdict} and {energy}" if energy else verdict


def first_difference(a: str, b: str) -> int | None:
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def tokens_before(result: RequestResult, char_position: int) -> int | None:
    if result.chunk_tokens is None or len(result.chunk_tokens) != len(result.chunk_chars):
        return None
    ends = accumulate(result.chunk_chars)  # where each chunk ends, in characters
    return sum(count for end, count in zip(ends, result.chunk_tokens, strict=True) if end <= char_position)


def compare_outputs(a: Sequence[RequestResult], b: Sequence[RequestResult]) -> Equivalence:
    """Pairs requests by index (same prompt, same order) and compares successful ones."""
    b_by_index = {result.index: result for result in b if result.ok}
    outcome = Equivalence()
    for left in sorted((r for r in a if r.ok), key=lambda r: r.index):
        right = b_by_index.get(left.index)
        if right is None or right.prompt_id != left.prompt_id:
            continue
        outcome.compared += 1
        left_text, right_text = left.text, right.text
        if left.text_truncated or right.text_truncated:
            limit = min(len(left_text), len(right_text))
            left_text, right_text = left_text[:limit], right_text[:limit]
        position = first_difference(left_text, right_text)
        if position is None:
            outcome.identical += 1
            continue
        bounds = [t for t in (tokens_before(left, position), tokens_before(right, position)) if t is not None]
        outcome.divergences.append(
            Divergence(
                index=left.index,
                prompt_id=left.prompt_id,
                char_position=position,
                token_position=max(bounds) if bounds else None,
                a_snippet=left.text[max(0, position - SNIPPET_BEFORE) : position + SNIPPET_AFTER],
                b_snippet=right.text[max(0, position - SNIPPET_BEFORE) : position + SNIPPET_AFTER],
            )
        )
    return outcome


def burst_summary(result: BurstResult, *, with_detail: bool = True) -> BurstSummary:
    a, b = result.arms[0], result.arms[1] if len(result.arms) > 1 else None
    settings = result.settings
    shared = b is not None and a.metrics_url is not None and a.metrics_url == b.metrics_url

    def summary(arm: ArmResult, other: ArmResult | None) -> ArmSummary:
        return arm_summary(
            arm, with_detail=with_detail, settings=settings, shared_with=other if shared else None
        )

    return BurstSummary(
        a=summary(a, b),
        b=summary(b, a) if b else None,
        comparison=comparison(a, b, settings=settings) if b else None,
        equivalence=compare_outputs(a.requests, b.requests) if b and settings.temperature == 0.0 else None,
        settings=settings,
        started_at=result.started_at,
        duration_s=result.duration_s,
        cancelled=result.cancelled,
    )
