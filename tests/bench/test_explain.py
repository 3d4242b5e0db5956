"""The statistics that explain a burst (pure functions), the options that drive them, percentiles, bootstrap
CIs and the verdict line."""

from __future__ import annotations

import random

import pytest

from tui.bench import burst_options as options
from tui.bench import explain
from tui.bench.burst_options import OptionError
from tui.bench.report.summary import verdict_text
from tui.bench.stats import RateSample, bootstrap_pooled_ratio_ci, percentile, pooled_rate, summarize


def _req(
    drafted: int | None, accepted: int | None, steps: int | None = None, **more: object
) -> explain.RequestFigures:
    return explain.RequestFigures(ok=True, drafted=drafted, accepted=accepted, spec_steps=steps, **more)  # type: ignore[arg-type]


def test_pooled_acceptance_and_its_distribution_over_requests() -> None:
    # One long request with high acceptance dominates the pooled figure; the median request is low.
    requests = [_req(10, 1, 5) for _ in range(9)] + [_req(1000, 900, 500)]
    figures = explain.acceptance(requests)
    assert figures.pooled == pytest.approx(909 / 1090)
    assert figures.p50 == pytest.approx(0.1) and figures.p10 == pytest.approx(0.1)
    assert figures.p90 == pytest.approx(0.1 + 0.1 * (0.9 - 0.1))  # rank 8.1 of 0..9
    assert figures.mean_length == pytest.approx(1 + 909 / 545)
    assert figures.requests == 10 and figures.note is None


def test_per_position_from_histograms_pooled_over_requests() -> None:
    # k = 2. Request 1: 4 steps accepting 0, 1, 2, 2; request 2: 2 steps accepting 2, 2.
    one = _req(8, 5, 4, acceptance_histogram=[1, 1, 2])
    two = _req(4, 4, 2, acceptance_histogram=[0, 0, 2])
    figures = explain.acceptance([one, two])
    assert figures.per_position == pytest.approx([5 / 6, 4 / 6])
    assert explain.acceptance([one, _req(4, 4, 2)]).per_position is None  # one request without a histogram


def test_missing_figures_are_none_with_a_reason() -> None:
    assert explain.acceptance([_req(None, None)]).pooled is None
    assert "no request carried" in (explain.acceptance([_req(None, None)]).note or "")
    partial = explain.acceptance([_req(10, 5, 5), _req(None, None)])
    assert partial.pooled == 0.5 and partial.mean_length is not None
    assert partial.note == "1 of 2 requests carried draft figures"
    assert explain.acceptance([_req(10, 5, None)]).mean_length is None  # llama.cpp: no step count


def test_category_table() -> None:
    requests = [
        _req(10, 8, 5, category="code", decode=(100.0, 1.0)),
        _req(10, 6, 5, category="code", decode=(100.0, 3.0)),
        _req(10, 2, 5, category="chat", decode=(50.0, 1.0)),
    ]
    rows = {row.category: row for row in explain.categories(requests)}
    assert list(rows) == ["code", "chat"]
    assert rows["code"].acceptance == pytest.approx(0.7) and rows["code"].decode_tokens_per_s == 50.0
    assert rows["chat"].mean_length == pytest.approx(1.4) and rows["chat"].requests == 1


def test_outliers_flag_garbled_and_looping_requests_with_their_snippet() -> None:
    requests = [
        _req(300, 2, 100, prompt_id="p1", snippet="Translate\nthis   odd text"),
        _req(300, 299, 100, prompt_id="p2", snippet="Repeat after me " * 10),
        _req(300, 150, 100, prompt_id="p3"),
        _req(3, 0, 1, prompt_id="p4"),  # too few drafts to say
    ]
    found = explain.outliers(requests)
    assert [(o.prompt_id, o.kind) for o in found] == [("p1", "low"), ("p2", "high")]
    assert found[0].snippet == "Translate this odd text"
    assert len(found[1].snippet) == 60 and found[1].snippet.endswith("…")
    assert "repetition loop" in found[1].describe() and "mean length 3.99" in found[1].describe()


def test_server_vs_client_ttft_and_queue() -> None:
    requests = [
        _req(None, None, client_ttft_s=0.100, server_ttft_ms=80.0, queue_ms=5.0),
        _req(None, None, client_ttft_s=0.120, server_ttft_ms=90.0, queue_ms=15.0),
        _req(None, None, client_ttft_s=0.300),  # no server figure: not in the difference
    ]
    figures = explain.timing(requests)
    assert figures.requests == 2
    assert figures.overhead_mean_ms == pytest.approx(25.0)
    assert figures.queue_mean_ms == 10.0 and figures.server_ttft_p50_ms == 85.0
    assert figures.client_ttft_p50_ms == pytest.approx(120.0)


def test_reconciliation() -> None:
    ours = [_req(100, 60), _req(190, 100)]
    exact = explain.reconcile(ours, 290.0, 160.0)
    assert exact.exact and exact.other_share == 0.0 and "Σ per-request = /metrics" in exact.message
    other = explain.reconcile(ours, 500.0, 300.0)
    assert not other.exact and other.other_share == pytest.approx(0.42)
    assert other.message.startswith("42% of drafts were not ours") and "other load" in other.message
    assert "exceed" in explain.reconcile(ours, 100.0, 50.0).message
    assert explain.reconcile(ours, None, None).other_share is None
    assert explain.reconcile([_req(None, None)], 10.0, 5.0).message.startswith("no per-request")
    steps = [_req(None, None, 10), _req(None, None, 5)]
    assert explain.reconcile(steps, None, None, server_steps=15.0).exact
    assert explain.reconcile(steps, None, None, server_steps=30.0).other_share == pytest.approx(0.5)
    # One URL for both arms: the other arm's requests are ours too.
    assert explain.reconcile(ours, 580.0, 320.0, shared_with=ours).exact


def test_cache_report_and_warning() -> None:
    a = explain.cache([_req(None, None, cached_tokens=141, prompt_tokens=142)])
    b = explain.cache(
        [_req(None, None, cached_tokens=18, prompt_tokens=142), explain.RequestFigures(ok=False)]
    )
    assert a.share == pytest.approx(141 / 142) and b.requests == 1
    warning = explain.cache_warning(a, b)
    assert warning is not None and "99%" in warning and "13%" in warning and "cache state" in warning
    assert explain.cache_warning(explain.CacheFigures(1, 50, 100), explain.CacheFigures(1, 59, 100)) is None
    assert explain.cache_warning(explain.CacheFigures(), b) is None


def test_slo_goodput_and_throughput() -> None:
    slo = options.parse_slo("ttft=500ms,tpot=40ms,e2e=10s")
    assert slo == explain.Slo(ttft_s=0.5, tpot_s=0.04, e2e_s=10.0)
    requests = [
        _req(None, None, client_ttft_s=0.2, tpot_s=0.02, e2e_s=3.0),
        _req(None, None, client_ttft_s=0.7, tpot_s=0.02, e2e_s=3.0),  # TTFT missed
        _req(None, None, client_ttft_s=0.2, tpot_s=None, e2e_s=0.3),  # TPOT unknown: not good
        explain.RequestFigures(ok=False),
    ]
    result = explain.goodput(requests, slo, active_s=2.0)
    assert (result.good, result.requests, result.fraction, result.per_s) == (1, 4, 0.25, 0.5)
    assert explain.goodput(requests, options.parse_slo("e2e=5"), active_s=None).per_s is None
    assert explain.request_throughput(requests, 2.0) == 1.5


@pytest.mark.parametrize("text", ["ttft", "ttft=fast", "speed=3ms", "ttft=0ms", "ttft=1ms,ttft=2ms", ""])
def test_bad_slo(text: str) -> None:
    with pytest.raises(OptionError, match="--slo"):
        options.parse_slo(text)


def test_percentiles_and_extra_fields() -> None:
    assert options.parse_percentiles("99.9,50,90,99") == (50.0, 90.0, 99.0, 99.9)
    for bad in ("101", "x", ""):
        with pytest.raises(OptionError, match="--percentiles"):
            options.parse_percentiles(bad)
    assert options.parse_extra('{"enable_speculative": false}', "--b-extra") == {"enable_speculative": False}
    for bad in ("[1]", "{", '{"stream": false}'):
        with pytest.raises(OptionError, match="--a-extra"):
            options.parse_extra(bad, "--a-extra")


def test_schedule_choice_says_why() -> None:
    schedule, why = options.choose_schedule(None, "http://127.0.0.1:8000", "http://localhost:8001")
    assert schedule == "alternate" and "default" in why and "both arms on localhost" in why
    schedule, why = options.choose_schedule("parallel", "http://gpu1:8000", "http://gpu1:8001")
    assert schedule == "parallel" and "compete" in why
    assert options.choose_schedule(None, "http://gpu1:8000", "http://gpu2:8000")[0] == "alternate"
    with pytest.raises(OptionError):
        options.choose_schedule("sometimes", "http://a", "http://b")
    said = options.arms_differ_by("http://h:1/v1", "http://h:1/v1/", {"enable_speculative": True}, {})
    assert said is not None and "enable_speculative" in said and "not by server" in said
    assert options.arms_differ_by("http://h:1", "http://h:2", {}, {}) is None


def _rounds(ratios: list[float], per_round: int = 12, seed: int = 1) -> tuple[list, list]:
    rng = random.Random(seed)
    a, b = [], []
    for number, ratio in enumerate(ratios):
        for _ in range(per_round):
            seconds = rng.uniform(0.9, 1.1)
            a.append((number, (100.0, seconds)))
            b.append((number, (100.0 * ratio * rng.uniform(0.97, 1.03), seconds)))
    return a, b


def test_round_bootstrap_widens_and_warns_when_rounds_disagree() -> None:
    a, b = _rounds([0.55, 0.9, 0.6, 0.88])
    result = explain.bootstrap_rounds(a, b, resamples=400)
    assert result.interval is not None and result.within_burst is not None
    assert result.disagree and "rounds disagree" in (result.warning() or "")
    assert result.interval[1] - result.interval[0] > result.within_burst[1] - result.within_burst[0]


def test_round_bootstrap_agrees_for_steady_rounds() -> None:
    a, b = _rounds([0.8, 0.8, 0.8, 0.8])
    result = explain.bootstrap_rounds(a, b, resamples=400)
    assert not result.disagree and result.warning() is None
    assert result.interval is not None and result.interval[0] < 0.8 < result.interval[1]
    single = explain.bootstrap_rounds(*_rounds([0.8]), resamples=200)
    assert single.rounds == 1 and single.interval == single.within_burst


def _per_request(values: list[float]) -> list[RateSample]:
    """One unit of time per value: the pooled rate is then the plain mean."""
    return [(value, 1.0) for value in values]


def test_percentile_interpolates_between_ranks() -> None:
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert percentile(values, 0) == 10.0
    assert percentile(values, 50) == 30.0
    assert percentile(values, 90) == pytest.approx(46.0)
    assert percentile(values, 100) == 50.0
    assert percentile([], 50) is None
    assert percentile([7.0], 99) == 7.0


def test_summarize_skips_unknown_and_keeps_none_for_nothing() -> None:
    summary = summarize([None, 1.0, 3.0, None])
    assert summary.mean == 2.0 and summary.p50 == 2.0
    empty = summarize([None, None])
    assert empty.mean is None and empty.p99 is None


def test_bootstrap_ci_covers_the_true_ratio_and_is_seeded() -> None:
    rng = random.Random(42)
    a = [rng.gauss(100, 10) for _ in range(60)]
    b = [rng.gauss(180, 15) for _ in range(60)]
    ci = bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), seed=3)
    assert ci is not None and ci[0] < 1.8 < ci[1] and ci[1] - ci[0] < 0.2
    assert bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), seed=3) == ci  # same seed


def test_paired_bootstrap_is_narrower_when_prompts_drive_the_spread() -> None:
    rng = random.Random(7)
    prompt_speed = [rng.uniform(50, 150) for _ in range(40)]
    a = [speed * rng.uniform(0.98, 1.02) for speed in prompt_speed]
    b = [speed * 1.5 * rng.uniform(0.98, 1.02) for speed in prompt_speed]
    paired = bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), paired=True, seed=1)
    independent = bootstrap_pooled_ratio_ci(_per_request(a), _per_request(b), seed=1)
    assert paired and independent
    assert paired[1] - paired[0] < (independent[1] - independent[0]) / 3
    assert paired[0] < 1.5 < paired[1]


def test_verdict_lines() -> None:
    assert verdict_text(1.8, (1.7, 1.9), 0.012, "acceptance 71%") == (
        "B is 1.80x faster (95% CI 1.70-1.90), TTFT +12 ms, acceptance 71%"
    )
    assert verdict_text(1.02, (0.95, 1.09), -0.003, None).startswith("no significant difference")
    assert verdict_text(0.5, (0.45, 0.55), 0.0, None).startswith("B is 2.00x slower")
    assert "no comparison" in verdict_text(None, None, None, None)


def test_pooled_ratio_ignores_a_stream_read_all_at_once() -> None:
    # Eight requests per arm: B decodes 100 tokens in 1 s, A in 2 s (B is 2x faster). One A
    # stream was read all at once by a busy client: its decode time looks like 1 ms.
    a = [(100.0, 2.0)] * 7 + [(100.0, 0.001)]
    b = [(100.0, 1.0)] * 8
    mean_ratio = (sum(t / d for t, d in b) / 8) / (sum(t / d for t, d in a) / 8)
    assert mean_ratio < 0.1  # the per-request mean says B is 10x slower
    pooled = pooled_rate(b) / pooled_rate(a)
    assert pooled == pytest.approx(1.75, rel=0.01)  # 800/8 s over 800/14.001 s
    low, high = bootstrap_pooled_ratio_ci(a, b, paired=True, seed=0)
    assert 1.0 < low <= pooled <= high


def test_too_few_values_or_no_duration_are_unknown() -> None:
    assert bootstrap_pooled_ratio_ci(_per_request([1.0]), _per_request([2.0, 3.0])) is None
    unequal = _per_request([1.0, 2.0]), _per_request([2.0, 3.0, 4.0])
    assert bootstrap_pooled_ratio_ci(*unequal, paired=True) is None
    assert pooled_rate([]) is None
    assert pooled_rate([(5.0, 0.0)]) is None
