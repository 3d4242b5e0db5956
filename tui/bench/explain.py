"""Figures that explain a burst, from `RequestFigures`. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import zip_longest

from tui.bench import server_figures, stats
from tui.bench.server_figures import ServerFigures
from tui.bench.stats import RateSample, pooled_rate
from tui.format import fmt_bound, fmt_count, fmt_length, fmt_rate, fmt_times

SNIPPET_CHARS = 60
MIN_OUTLIER_DRAFTS = 16  # fewer drafted tokens say little about one request's acceptance
LOW_ACCEPTANCE = 0.03  # mean length within ~3% of k of 1.0: garbled / off-distribution output
HIGH_ACCEPTANCE = 0.97  # mean length near k + 1: a repetition loop
CACHE_WARN_POINTS = 10.0
ROUNDS_DISAGREE_WIDTH = 1.5  # the rounds' CI this much wider than the requests' one: rounds disagree
ROUNDS_DISAGREE_SPREAD = 1.25  # ... and the fastest round's ratio more than 25% above the slowest's


class RequestFigures(ServerFigures):
    """One measured request: client-side timing plus what the server said (None: not known)."""

    ok: bool
    round: int = 0
    prompt_id: str = ""
    category: str | None = None
    snippet: str = ""
    client_ttft_s: float | None = None
    e2e_s: float | None = None
    tpot_s: float | None = None
    decode: RateSample | None = None  # (decode tokens, decode seconds)


@dataclass(frozen=True)
class AcceptanceFigures:
    """Per-request acceptance of one arm. `requests` counts the requests whose server said."""

    requests: int = 0
    drafted: int = 0
    accepted: int = 0
    pooled: float | None = None  # Σaccepted / Σdrafted
    p10: float | None = None
    p50: float | None = None
    p90: float | None = None
    mean_length: float | None = None  # 1 + Σaccepted / Σsteps (bonus token included)
    per_position: list[float] | None = None  # position i accepted in this share of steps (pooled)
    note: str | None = None
    k_in_effect: float | None = None  # Σdrafted / Σsteps: draft tokens a step proposed
    k_configured: int | None = None  # the server's configured k (the largest draft a step may make)
    per_position_by_length: dict[int, list[float]] | None = None  # drafts of several lengths, apart
    per_position_note: str | None = None  # why per-position is shown per length or not at all


def acceptance(requests: Sequence[RequestFigures]) -> AcceptanceFigures:
    counted = [r for r in requests if r.ok and r.drafted is not None and r.accepted is not None]
    ok = sum(1 for r in requests if r.ok)
    if not counted:
        note = "no request carried per-request draft figures" if ok else "no request succeeded"
        return AcceptanceFigures(note=note)
    drafted = sum(r.drafted or 0 for r in counted)
    accepted = sum(r.accepted or 0 for r in counted)
    rates = stats.known([r.acceptance_rate for r in counted])
    all_steps = all(r.spec_steps is not None for r in counted)
    steps = sum(r.spec_steps or 0 for r in counted) if all_steps else 0
    positions, by_length, positions_note = per_position_split(counted)
    configured = [r.spec_tokens for r in counted if r.spec_tokens is not None]
    return AcceptanceFigures(
        requests=len(counted),
        drafted=drafted,
        accepted=accepted,
        pooled=server_figures.acceptance_rate(accepted, drafted),
        p10=stats.percentile(rates, 10),
        p50=stats.percentile(rates, 50),
        p90=stats.percentile(rates, 90),
        mean_length=server_figures.mean_acceptance_length(accepted, steps) if all_steps else None,
        per_position=positions,
        note=f"{len(counted)} of {ok} requests carried draft figures" if len(counted) < ok else None,
        k_in_effect=drafted / steps if steps else None,
        k_configured=max(configured) if configured else None,
        per_position_by_length=by_length,
        per_position_note=positions_note,
    )


MIXED = "mixed: steps drafted different lengths"


def per_position_split(
    requests: Sequence[RequestFigures],
) -> tuple[list[float] | None, dict[int, list[float]] | None, str | None]:
    """(per-position acceptance, the same per draft length, why): drafts of different lengths kept apart."""
    if not any(_varied(r) for r in requests):
        return per_position(requests), None, None
    if any(r.histograms_by_length is None for r in requests):
        return None, None, f"{MIXED}, and the server did not say which (per position unknown)"
    grouped: dict[int, list[list[int]]] = {}
    for request in requests:
        for length, histogram in (request.histograms_by_length or {}).items():
            grouped.setdefault(length, [[0] * (length + 1)]).append(histogram[: length + 1])
    rates = {length: _positions(_pooled(histograms)) for length, histograms in sorted(grouped.items())}
    known = {length: positions for length, positions in rates.items() if positions is not None}
    if len(known) == 1:
        return next(iter(known.values())), None, None
    lengths = ", ".join(str(length) for length in known)
    return None, known or None, f"{MIXED} ({lengths}): per position given per draft length"


def _varied(request: RequestFigures) -> bool:
    """The request's steps did not all draft the configured k (its own split says so, or its counts)."""
    if (by_length := request.histograms_by_length) is not None:
        return len(by_length) > 1 or (
            request.spec_tokens is not None and set(by_length) != {request.spec_tokens}
        )
    if request.drafted is None or not request.spec_steps or request.spec_tokens is None:
        return False
    return request.drafted != request.spec_steps * request.spec_tokens


def _pooled(histograms: Sequence[Sequence[int]]) -> list[int]:
    return [sum(counts) for counts in zip_longest(*histograms, fillvalue=0)]


def _positions(totals: list[int]) -> list[float] | None:
    steps = sum(totals)
    if steps <= 0 or len(totals) < 2:
        return None
    return [sum(totals[i + 1 :]) / steps for i in range(len(totals) - 1)]


def per_position(requests: Sequence[RequestFigures]) -> list[float] | None:
    """Pooled per-position acceptance from the histograms; None unless every counted request has one."""
    histograms = [r.acceptance_histogram for r in requests if r.ok and r.drafted is not None]
    if not histograms or any(h is None for h in histograms):
        return None
    return _positions(_pooled([h or [] for h in histograms]))


@dataclass(frozen=True)
class CategoryRow:
    category: str
    requests: int
    acceptance: float | None  # pooled over the category's requests
    mean_length: float | None
    decode_tokens_per_s: float | None  # pooled


def categories(requests: Sequence[RequestFigures]) -> list[CategoryRow]:
    """Acceptance and decode speed per prompt category, in first-seen order (SPEED-Bench's matrix)."""
    groups: dict[str, list[RequestFigures]] = {}
    for request in requests:
        groups.setdefault(request.category or "(none)", []).append(request)
    rows = []
    for name, members in groups.items():
        figures = acceptance(members)
        rate = pooled_rate([r.decode for r in members if r.ok and r.decode is not None])
        rows.append(
            CategoryRow(name, sum(1 for r in members if r.ok), figures.pooled, figures.mean_length, rate)
        )
    return rows


@dataclass(frozen=True)
class Outlier:
    prompt_id: str
    round: int
    kind: str  # "low" (mean length ≈ 1.0) or "high" (≈ k + 1)
    acceptance: float
    mean_length: float | None
    snippet: str

    def describe(self) -> str:
        length = f"mean length {fmt_length(self.mean_length)}"
        why = "garbled or off-distribution output?" if self.kind == "low" else "a repetition loop?"
        return f"{self.prompt_id}: {length}, acceptance {fmt_rate(self.acceptance)} ({why}) «{self.snippet}»"


def outliers(requests: Sequence[RequestFigures]) -> list[Outlier]:
    """Requests whose acceptance is near 0 (mean length ≈ 1.0) or near 1 (≈ k + 1)."""
    found = []
    for r in requests:
        rate = r.acceptance_rate
        if not r.ok or rate is None or (r.drafted or 0) < MIN_OUTLIER_DRAFTS:
            continue
        kind = "low" if rate <= LOW_ACCEPTANCE else "high" if rate >= HIGH_ACCEPTANCE else None
        if kind is not None:
            found.append(
                Outlier(r.prompt_id, r.round, kind, rate, r.mean_acceptance_length, snippet(r.snippet))
            )
    return found


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    clean = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


@dataclass(frozen=True)
class TimingFigures:
    """Milliseconds. `overhead` = client TTFT - server TTFT per request (network + HTTP + client)."""

    requests: int = 0  # requests with a server-side TTFT
    client_ttft_p50_ms: float | None = None
    server_ttft_p50_ms: float | None = None
    overhead_p50_ms: float | None = None
    overhead_mean_ms: float | None = None
    queue_p50_ms: float | None = None
    queue_mean_ms: float | None = None


def timing(requests: Sequence[RequestFigures]) -> TimingFigures:
    ok = [r for r in requests if r.ok]
    paired = [r for r in ok if r.server_ttft_ms is not None and r.client_ttft_s is not None]
    overheads = [(r.client_ttft_s or 0.0) * 1000.0 - (r.server_ttft_ms or 0.0) for r in paired]
    client = [r.client_ttft_s * 1000.0 for r in ok if r.client_ttft_s is not None]
    overhead, queue = stats.summarize(overheads), stats.summarize([r.queue_ms for r in ok])
    return TimingFigures(
        requests=len(paired),
        client_ttft_p50_ms=stats.summarize(client).p50,
        server_ttft_p50_ms=stats.summarize([r.server_ttft_ms for r in ok]).p50,
        overhead_p50_ms=overhead.p50,
        overhead_mean_ms=overhead.mean,
        queue_p50_ms=queue.p50,
        queue_mean_ms=queue.mean,
    )


@dataclass(frozen=True)
class Reconciliation:
    """Σ per-request figures against the arm's /metrics deltas over the same window."""

    ours_drafted: int | None
    server_drafted: float | None
    ours_accepted: int | None
    server_accepted: float | None
    other_share: float | None  # share of the server's drafts that were not this burst's
    exact: bool
    message: str


def reconcile(
    requests: Sequence[RequestFigures],
    server_drafted: float | None,
    server_accepted: float | None,
    *,
    shared_with: Sequence[RequestFigures] = (),
    incomplete: str | None = None,
    server_steps: float | None = None,
) -> Reconciliation:
    """`shared_with`: the other arm's requests on one /metrics; `server_steps`: SGLang's verify steps."""
    mine = [*requests, *shared_with]
    said: tuple[float | None, bool, str]
    if server_drafted is None and server_steps is not None:
        counted = [r.spec_steps for r in mine if r.spec_steps is not None]
        steps = sum(counted) if counted else None
        if steps is None:
            said = None, False, "no per-request verification steps: nothing to reconcile"
        elif steps == round(server_steps):
            said = 0.0, True, f"Σ per-request = /metrics: {steps} verification steps"
        elif steps > server_steps:
            exceed = f"per-request steps exceed /metrics ({steps} vs {fmt_count(server_steps)})"
            said = None, False, f"{exceed}: counters reset?"
        else:
            said = _other_load(steps, server_steps, "verification steps", incomplete)
        return Reconciliation(None, None, None, None, *said)
    ours = [r for r in mine if r.drafted is not None and r.accepted is not None]
    drafted = sum(r.drafted or 0 for r in ours) if ours else None
    accepted = sum(r.accepted or 0 for r in ours) if ours else None
    if server_drafted is None or server_accepted is None:
        said = None, False, "no draft counters on /metrics: nothing to reconcile with"
    elif drafted is None or accepted is None:
        said = None, False, "no per-request draft figures: nothing to reconcile"
    elif drafted == round(server_drafted) and accepted == round(server_accepted):
        said = 0.0, True, f"Σ per-request = /metrics: {drafted} drafted, {accepted} accepted"
    elif drafted > server_drafted or accepted > server_accepted:
        exceed = f"per-request figures exceed /metrics ({drafted} vs {fmt_count(server_drafted)} drafted)"
        said = None, False, f"{exceed}: counters reset or another server answered"
    else:
        said = _other_load(drafted, server_drafted, "drafts", incomplete)
    return Reconciliation(drafted, server_drafted, accepted, server_accepted, *said)


def _other_load(
    ours: int, server: float, noun: str, incomplete: str | None
) -> tuple[float | None, bool, str]:
    """(the share of the server's count that was not this burst's, not exact, the message)."""
    share = 1.0 - ours / server if server > 0 else None
    said = f"{fmt_rate(share)} of {noun} were not ours" if share is not None else f"the {noun} differ"
    message = f"{said} ({ours} of {fmt_count(server)}): the server was serving other load"
    return share, False, message + (f" (or {incomplete})" if incomplete else "")


@dataclass(frozen=True)
class CacheFigures:
    requests: int = 0  # requests whose server reported cached tokens
    cached_tokens: int = 0
    prompt_tokens: int = 0

    @property
    def share(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens > 0 else None


def cache(requests: Sequence[RequestFigures]) -> CacheFigures:
    known = [r for r in requests if r.ok and r.cached_tokens is not None and r.prompt_tokens]
    return CacheFigures(
        requests=len(known),
        cached_tokens=sum(r.cached_tokens or 0 for r in known),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in known),
    )


def cache_warning(a: CacheFigures, b: CacheFigures) -> str | None:
    """A warning when the arms' cached prompt shares differ by more than CACHE_WARN_POINTS points."""
    if a.share is None or b.share is None or abs(a.share - b.share) * 100.0 <= CACHE_WARN_POINTS:
        return None
    return (
        f"prefix cache differs: A had {fmt_rate(a.share)} of prompt tokens cached "
        f"({a.cached_tokens}/{a.prompt_tokens}), B {fmt_rate(b.share)} "
        f"({b.cached_tokens}/{b.prompt_tokens}): "
        "TTFT differences are cache state, not speculation"
    )


@dataclass(frozen=True)
class Slo:
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    def describe(self) -> str:
        limits = (("TTFT", self.ttft_s), ("TPOT", self.tpot_s), ("e2e", self.e2e_s))
        return ", ".join(f"{name} ≤ {fmt_bound(value)}" for name, value in limits if value is not None)

    def met(self, request: RequestFigures) -> bool:
        """Every given SLO met; a figure that is unknown (e.g. TPOT of a 1-token answer) does not meet it."""
        pairs = (
            (self.ttft_s, request.client_ttft_s),
            (self.tpot_s, request.tpot_s),
            (self.e2e_s, request.e2e_s),
        )
        return request.ok and all(
            limit is None or (value is not None and value <= limit) for limit, value in pairs
        )


@dataclass(frozen=True)
class Goodput:
    requests: int
    good: int
    fraction: float | None  # good / sent (failed requests are not good)
    per_s: float | None  # good requests per second of the arm's active time


def goodput(requests: Sequence[RequestFigures], slo: Slo, active_s: float | None) -> Goodput:
    good = sum(1 for r in requests if slo.met(r))
    fraction = good / len(requests) if requests else None
    per_s = good / active_s if active_s and active_s > 0 else None
    return Goodput(len(requests), good, fraction, per_s)


def request_throughput(requests: Sequence[RequestFigures], active_s: float | None) -> float | None:
    """Successful requests per second of the arm's active time."""
    return sum(1 for r in requests if r.ok) / active_s if active_s and active_s > 0 else None


@dataclass(frozen=True)
class RoundsInterval:
    """The pooled-ratio CI with rounds resampled as well as requests, next to the requests-only one."""

    rounds: int
    interval: tuple[float, float] | None  # rounds and requests resampled
    within_burst: tuple[float, float] | None  # requests only
    round_ratios: list[float | None] = field(default_factory=list)
    disagree: bool = False

    def warning(self) -> str | None:
        if not self.disagree:
            return None
        shown = ", ".join(fmt_times(r) for r in self.round_ratios)
        return f"rounds disagree (ratio per round {shown}): the arms' speed drifted during the burst"


def _by_round(samples: Sequence[tuple[int, RateSample]]) -> dict[int, list[RateSample]]:
    rounds: dict[int, list[RateSample]] = {}
    for number, sample in samples:
        rounds.setdefault(number, []).append(sample)
    return rounds


def bootstrap_rounds(
    a: Sequence[tuple[int, RateSample]],
    b: Sequence[tuple[int, RateSample]],
    *,
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> RoundsInterval:
    """CI of pooled_rate(b) / pooled_rate(a), resampling rounds then requests within each."""
    rounds_a, rounds_b = _by_round(a), _by_round(b)
    numbers = sorted(set(rounds_a) & set(rounds_b))
    rates = [(pooled_rate(rounds_a[number]), pooled_rate(rounds_b[number])) for number in numbers]
    round_ratios = [rate_b / rate_a if rate_a and rate_b is not None else None for rate_a, rate_b in rates]

    interval_of = partial(
        stats.grouped_ratio_ci, rounds_a, rounds_b, numbers, resamples=resamples, seed=seed, level=level
    )
    within = interval_of(resample_groups=False)
    interval = interval_of(resample_groups=True) if len(numbers) >= 2 else within
    disagree = False
    known = [ratio for ratio in round_ratios if ratio]
    if interval is not None and within is not None and len(known) >= 2:
        inner, outer = within[1] - within[0], interval[1] - interval[0]
        spread = max(known) / min(known)  # rounds a few percent apart are not worth a warning
        disagree = inner > 0 and outer > ROUNDS_DISAGREE_WIDTH * inner and spread > ROUNDS_DISAGREE_SPREAD
    return RoundsInterval(len(numbers), interval, within, round_ratios, disagree)
