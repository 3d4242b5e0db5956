"""Derived figures per backend (README values, label sets, old names, stale gauges, k) and quantiles."""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metrics_test_server import sample_body, sample_scrapes, scrape, vllm_page

from tui.format import MIXED, figure_text, fmt_k_in_effect
from tui.telemetry.backends import detect_backend
from tui.telemetry.backends.base import quantile_in_bucket
from tui.telemetry.figures import FIGURE_NAMES, Figures
from tui.telemetry.prometheus import MetricsFormatError, Sample
from tui.telemetry.scraper import Scrape
from tui.telemetry.window import ScrapeWindow, figures_between


def test_vllm_sample_figures() -> None:
    first, last = sample_scrapes("vllm", 10.0)
    assert (first.backend, last.backend) == ("vllm", "vllm")
    f = figures_between(first, last)
    rates = (f.generation_tokens_per_s, f.prompt_tokens_per_s, f.requests_per_s)
    assert rates == pytest.approx((594.9, 860.7, 0.5))
    assert (f.acceptance_rate, f.mean_acceptance_length) == pytest.approx((3468 / 4960, 1 + 3468 / 2480))
    assert f.per_position_acceptance == pytest.approx([1981 / 2480, 1487 / 2480])
    assert f.ttft_mean_s == pytest.approx(0.2056565284729004 / 4)
    assert (f.ttft_p50_s, f.ttft_p95_s) == pytest.approx((0.060, 0.078))
    # True per-token latency from request_time_per_output_token_seconds, not per-step ITL (9.99 ms).
    assert (f.tpot_mean_s, f.e2e_mean_s) == pytest.approx((0.021173870957087004 / 5, 24.449790716171265 / 5))
    assert (f.running, f.waiting) == (2.0, 0.0)
    assert (f.kv_cache_usage, f.prefix_cache_hit_rate) == pytest.approx((0.005718747362201401, 4096 / 8607))


def test_sglang_sample_figures() -> None:
    f = figures_between(*sample_scrapes("sglang", 10.0))
    rates = (f.generation_tokens_per_s, f.prompt_tokens_per_s, f.requests_per_s)
    assert rates == pytest.approx((2332.7, (13442 + 2624) / 10, 0.8))
    length = 27481 / 9456
    assert (f.mean_acceptance_length, f.acceptance_rate) == pytest.approx((length, (length - 1) / 3))
    assert f.per_position_acceptance is None
    assert (f.ttft_mean_s, f.ttft_p50_s) == pytest.approx((4.008309179035109 / 9, 0.46))
    assert f.tpot_mean_s == pytest.approx(320.57197711271874 / 22960)
    assert f.e2e_mean_s == pytest.approx(400.90856586492737 / 8)
    assert (f.running, f.waiting) == (32.0, 1.0)
    assert (f.kv_cache_usage, f.prefix_cache_hit_rate) == pytest.approx((0.1633637075134168, 1920 / 13250))


def test_llamacpp_sample_figures_with_injected_delta_t() -> None:
    first, last = sample_scrapes("llamacpp", 1.0)
    f = figures_between(first, last)
    # Prompt tokens: computed + cached, as for vLLM.
    assert (f.generation_tokens_per_s, f.prompt_tokens_per_s) == pytest.approx((704.0, 187.0 + 163.0))
    assert (f.acceptance_rate, f.mean_acceptance_length) == pytest.approx((1.0, 9.0))
    assert f.per_position_acceptance == pytest.approx([1.0] * 8)  # family absent at t0 counts from 0
    assert f.tpot_mean_s == pytest.approx(0.667529 / 693, rel=1e-4)
    assert f.requests_per_s == pytest.approx(11.0)
    assert f.prefix_cache_hit_rate == pytest.approx(163 / 350)
    assert (f.running, f.waiting) == (0.0, 0.0)
    for name in ("ttft_mean_s", "ttft_p50_s", "ttft_p95_s", "e2e_mean_s", "kv_cache_usage"):
        assert getattr(f, name) is None, name
    f = figures_between(*sample_scrapes("llamacpp", 0.624915))  # the rates scale with the window
    assert f.generation_tokens_per_s == pytest.approx(1126.6, abs=0.05)


def test_llamacpp_gauge_stolen_by_another_scraper_falls_back_and_the_old_kv_gauge_is_used() -> None:
    first, _last = sample_scrapes("llamacpp", 1.0)
    text = sample_body("llamacpp", "metrics_t1.txt").decode()
    stolen = text.replace("llamacpp:predicted_tokens_seconds 1038.16", "llamacpp:predicted_tokens_seconds 0")
    f = figures_between(first, scrape(stolen, 101.0))
    assert f.requests_per_s is None
    assert f.tpot_mean_s is None and "another client" in f.notes["tpot_mean_s"]  # no request count: unknown
    old_kv = text + "llamacpp:kv_cache_usage_ratio 0.25\n"
    assert figures_between(first, scrape(old_kv, 101.0)).kv_cache_usage == 0.25


def test_single_scrape_has_gauges_but_no_rates_and_an_idle_window_zero_rate_but_no_ratios() -> None:
    _, last = sample_scrapes("vllm", 10.0)
    f = figures_between(last, last)
    assert f.generation_tokens_per_s is None and f.acceptance_rate is None and f.ttft_p50_s is None
    assert f.running == 2.0
    f = figures_between(last, Scrape(0.0, 200.0, last.samples, None, "vllm"))
    assert f.generation_tokens_per_s == 0.0
    assert f.acceptance_rate is None and f.ttft_mean_s is None and f.ttft_p50_s is None


def test_down_last_scrape_gives_no_figures() -> None:
    first, _ = sample_scrapes("vllm", 10.0)
    down = Scrape(time=0.0, monotonic=110.0, samples=None, error="connection refused", backend=None)
    assert figures_between(first, down) == Figures()


# --- several engines and models (vLLM data parallel) ------------------------------------------------------


# (model, engine): counters at the first scrape (twice that at the second), then the gauges
# fmt: off
_ENGINES = {
    ("a", "0"): {"gen": 1000, "drafts": 400, "accepted": 600, "done": 10, "fast": 5, "running": 3, "kv": 0.2},
    ("a", "1"): {"gen": 3000, "drafts": 1000, "accepted": 1000, "done": 30, "fast": 30, "running": 5, "kv": 0.4},  # noqa: E501
    ("b", "0"): {"gen": 500, "drafts": 100, "accepted": 100, "done": 2, "fast": 0, "running": 1, "kv": 0.6},
}
# fmt: on


def _vllm_engine_page(scale: float) -> str:
    lines = []
    for (model, engine), values in _ENGINES.items():
        v = {name: value if name in ("running", "kv") else value * scale for name, value in values.items()}
        labels = f'engine="{engine}",model_name="{model}"'
        lines += [
            f"vllm:generation_tokens_total{{{labels}}} {v['gen']}",
            f"vllm:spec_decode_num_drafts_total{{{labels}}} {v['drafts']}",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {v['drafts'] * 2}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {v['accepted']}",
            f'vllm:request_success_total{{{labels},finished_reason="stop"}} {v["done"]}',
            f"vllm:num_requests_running{{{labels}}} {v['running']}",
            f"vllm:kv_cache_usage_perc{{{labels}}} {v['kv']}",
            f'vllm:time_to_first_token_seconds_bucket{{{labels},le="0.1"}} {v["fast"]}',
            f'vllm:time_to_first_token_seconds_bucket{{{labels},le="1.0"}} {v["done"]}',
            f'vllm:time_to_first_token_seconds_bucket{{{labels},le="+Inf"}} {v["done"]}',
        ]
    return "\n".join(lines) + "\n"


def test_multi_engine_multi_model_vllm_sums_counts_and_averages_fractions() -> None:
    f = figures_between(scrape(_vllm_engine_page(1), 0.0), scrape(_vllm_engine_page(2), 10.0))
    assert (f.generation_tokens_per_s, f.requests_per_s) == pytest.approx((4500 / 10, 42 / 10))
    assert (f.acceptance_rate, f.mean_acceptance_length) == pytest.approx((1700 / 3000, 1 + 1700 / 1500))
    assert (f.running, f.kv_cache_usage) == pytest.approx((9.0, 0.4))
    # Buckets merged over the three series: 35 of 42 under 0.1 s.
    assert f.ttft_p50_s == pytest.approx(0.1 * 21 / 35)

    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(_vllm_engine_page(1), 0.0))
    window.add(scrape(_vllm_engine_page(2), 10.0))
    assert window.figures().model_dump(include=set(FIGURE_NAMES)) == f.model_dump(include=set(FIGURE_NAMES))
    by_model = window.figures_by_model()
    assert set(by_model) == {"a", "b"}
    assert by_model["a"].generation_tokens_per_s == pytest.approx(400.0)
    assert by_model["a"].running == 8.0 and by_model["a"].kv_cache_usage == pytest.approx(0.3)
    assert by_model["b"].acceptance_rate == pytest.approx(0.5)
    assert by_model["b"].running == 1.0 and by_model["b"].kv_cache_usage == pytest.approx(0.6)


# --- SGLang ranks -------------------------------------------------------------------------------------------


def _sglang_rank_page(decode: float, running: float, dp: bool) -> str:
    lines = []
    for rank in range(4):
        dp_label = f'dp_rank="{rank}",' if dp else ""
        labels = (
            f'{dp_label}engine_type="unified",model_name="m",'
            f'moe_ep_rank="{rank}",pp_rank="0",tp_rank="{rank}"'
        )
        lines += [
            f'sglang:realtime_tokens_total{{{labels},mode="decode"}} {decode}',
            f"sglang:num_running_reqs{{{labels}}} {running}",
            f"sglang:max_total_num_tokens{{{labels}}} 1000.0",
            f"sglang:kv_used_tokens{{{labels}}} 100.0",
            f'sglang:num_retracted_reqs{{{labels},pid="{4000 + rank}"}} 0.0',
        ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("dp", "rate", "running"), [(False, 200.0, 8.0), (True, 800.0, 32.0)])
def test_sglang_tp_ranks_are_counted_once_and_dp_ranks_summed(dp: bool, rate: float, running: float) -> None:
    f = figures_between(
        scrape(_sglang_rank_page(1000, 8, dp=dp), 0.0), scrape(_sglang_rank_page(3000, 8, dp=dp), 10.0)
    )
    assert f.generation_tokens_per_s == pytest.approx(rate)
    assert f.running == running
    assert f.kv_cache_usage == pytest.approx(0.1)


def _sglang_spec_page(running: float, verify: float, generated: float, *, steps: float | None = None) -> str:
    """The live spec gauges (4 draft tokens, `steps` the adaptive tier when given) and the two counters."""
    labels = 'engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"'
    text = (
        f"sglang:num_running_reqs{{{labels}}} {running}\n"
        f"sglang:spec_accept_length{{{labels}}} 2.5\n"
        f"sglang:spec_accept_rate{{{labels}}} 0.5\n"
        f"sglang:spec_num_draft_tokens{{{labels}}} 4.0\n"
        f'sglang:generation_tokens_total{{engine_type="unified",model_name="m"}} {generated}\n'
        f'sglang:spec_verify_calls_total{{engine_type="unified",model_name="m"}} {verify}\n'
    )
    if steps is not None:
        text += f"sglang:spec_num_steps{{{labels}}} {steps}\n"
    return text


@pytest.mark.parametrize(
    ("running", "second", "acceptance", "length"),
    [
        pytest.param(0, (10, 30), None, None, id="gauges hidden when idle"),
        pytest.param(4, (10, 30), 0.5, 2.5, id="gauges while running without finished requests"),
        pytest.param(4, (20, 60), (3.0 - 1) / 3, 3.0, id="counters preferred"),
    ],
)
def test_sglang_acceptance(
    running: float, second: tuple[float, float], acceptance: float | None, length: float | None
) -> None:
    first_page, second_page = _sglang_spec_page(running, 10, 30), _sglang_spec_page(running, *second)
    f = figures_between(scrape(first_page, 0.0), scrape(second_page, 5.0))
    assert f.acceptance_rate == pytest.approx(acceptance)
    assert f.mean_acceptance_length == pytest.approx(length)


@pytest.mark.parametrize(
    ("gauge", "length"),
    [pytest.param(2.2, 2.2, id="old server: gauge"), pytest.param(0.0, None, id="spec off")],
)
def test_sglang_server_without_verify_counter(gauge: float, length: float | None) -> None:
    labels = 'engine_type="unified",model_name="m",tp_rank="0"'
    page = f"sglang:num_running_reqs{{{labels}}} 3\nsglang:spec_accept_length{{{labels}}} {gauge}\n"
    f = figures_between(scrape(page, 0.0), scrape(page, 5.0))
    assert f.mean_acceptance_length == length and f.acceptance_rate is None


# --- renamed and removed vLLM names ---------------------------------------------------------------------


def _old_vllm_page(step: float) -> str:
    labels = 'model_name="old"'
    return (
        f"vllm:generation_tokens_total{{{labels}}} {1000 + 300 * step}\n"
        f"vllm:gpu_cache_usage_perc{{{labels}}} 0.42\n"
        f"vllm:gpu_prefix_cache_queries_total{{{labels}}} {100 * step}\n"
        f"vllm:gpu_prefix_cache_hits_total{{{labels}}} {25 * step}\n"
        f"vllm:time_per_output_token_seconds_sum{{{labels}}} {2.9 * step}\n"
        f"vllm:time_per_output_token_seconds_count{{{labels}}} {100 * step}\n"
        f"vllm:time_to_first_token_seconds_count{{{labels}}} {10 * step}\n"
        f"vllm:time_to_first_token_seconds_sum{{{labels}}} {1.0 * step}\n"
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {150 * step}\n"
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {200 * step}\n"
        f"vllm:spec_decode_draft_acceptance_rate{{{labels}}} 0.9\n"
    )


def test_old_vllm_names_and_the_v0_acceptance_gauge() -> None:
    f = figures_between(scrape(_old_vllm_page(1), 0.0), scrape(_old_vllm_page(2), 10.0))
    assert f.kv_cache_usage == 0.42
    assert f.prefix_cache_hit_rate == pytest.approx(0.25)
    assert f.acceptance_rate == pytest.approx(0.75)  # V0 counters beat the lifetime gauge
    assert f.mean_acceptance_length is None  # V0 has no num_drafts counter
    # Per-step latency spread over the tokens those steps produced (300 − 10 first tokens).
    assert f.tpot_mean_s == pytest.approx(2.9 / 290)
    v0 = 'vllm:spec_decode_draft_acceptance_rate{model_name="v0"} 0.8\nvllm:num_requests_running 1\n'
    assert figures_between(scrape(v0, 0.0), scrape(v0, 1.0)).acceptance_rate == 0.8  # no counters: the gauge


def test_unknown_page_gives_no_figures_and_vllm_without_spec_decoding_no_acceptance() -> None:
    page = "process_cpu_seconds_total 12.5\n"
    first, last = scrape(page, 0.0), scrape(page, 1.0)
    assert last.backend is None
    assert figures_between(first, last) == Figures()
    page = 'vllm:generation_tokens_total{engine="0",model_name="m"} %s\n'  # vLLM without spec decoding
    f = figures_between(scrape(page % 10, 0.0), scrape(page % 20, 1.0))
    assert f.generation_tokens_per_s == 10.0
    assert (f.acceptance_rate, f.per_position_acceptance, f.mean_acceptance_length) == (None, None, None)


# --- never raise -------------------------------------------------------------------------------------------

_names = st.sampled_from(
    [
        "vllm:generation_tokens_total",
        "vllm:spec_decode_num_drafts_total",
        "vllm:spec_decode_num_accepted_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:kv_cache_usage_perc",
        "sglang:realtime_tokens_total",
        "sglang:num_running_reqs",
        "sglang:spec_accept_length",
        "sglang:time_to_first_token_seconds_bucket",
        "llamacpp:tokens_predicted_total",
        "llamacpp:tokens_predicted_seconds_total",
        "llamacpp:predicted_tokens_seconds",
        "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
    ]
)
_labels = st.dictionaries(
    st.sampled_from(["le", "position", "tp_rank", "dp_rank", "engine", "model_name", "mode", "pid"]),
    st.one_of(
        st.sampled_from(["0", "1", "+Inf", "1e+06", "decode", "x", "-3", "NaN", ""]), st.text(max_size=4)
    ),
    max_size=4,
)
_samples = st.lists(
    st.builds(Sample, _names, _labels, st.floats(allow_nan=True, allow_infinity=True)), max_size=25
)


@settings(max_examples=300, deadline=None)
@given(_samples, _samples, st.floats(min_value=-10, max_value=1e6))
def test_figure_derivation_never_raises(first: list[Sample], last: list[Sample], seconds: float) -> None:
    f = figures_between(
        Scrape(0.0, 0.0, tuple(first), None, detect_backend(first)),
        Scrape(0.0, seconds, tuple(last), None, detect_backend(last)),
    )
    for name, value in f.model_dump().items():
        if isinstance(value, float):
            assert not math.isnan(value), name


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300))
def test_arbitrary_pages_never_raise_anything_but_format_errors(first: str, last: str) -> None:
    with contextlib.suppress(MetricsFormatError):
        figures_between(scrape(first, 0.0), scrape(last, 1.0))


def test_sglang_priority_parts_are_not_added_to_the_total() -> None:
    def page(total: float) -> str:
        labels = 'engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"'
        return (
            f'sglang:realtime_tokens_total{{{labels},mode="decode",priority=""}} {total}\n'
            f'sglang:realtime_tokens_total{{{labels},mode="decode",priority="1"}} {total * 0.25}\n'
            f'sglang:realtime_tokens_total{{{labels},mode="decode",priority="2"}} {total * 0.75}\n'
            f'sglang:num_running_reqs{{{labels},priority=""}} 4\n'
            f'sglang:num_running_reqs{{{labels},priority="1"}} 1\n'
            f'sglang:num_running_reqs{{{labels},priority="2"}} 3\n'
        )

    f = figures_between(scrape(page(1000), 0.0), scrape(page(2000), 10.0))
    assert f.generation_tokens_per_s == pytest.approx(100.0)
    assert f.running == 4.0


def _vllm_page(drafts: float, draft_tokens: float, positions: tuple[float, ...]) -> str:
    return vllm_page(None, drafts, sum(positions), draft_tokens=draft_tokens, positions=positions, running=4)


def test_vllm_static_k_keeps_per_position_and_a_table_of_k_says_mixed() -> None:
    first = scrape(_vllm_page(0, 0, (0, 0, 0)), 0.0)
    last = scrape(_vllm_page(100, 300, (80, 50, 20)), 10.0)
    f = figures_between(first, last)
    assert (f.k_in_effect, f.k_configured, f.k_in_effect_derived) == (3.0, 3, True)
    assert f.per_position_acceptance == pytest.approx([0.8, 0.5, 0.2]) and not f.per_position_mixed
    assert fmt_k_in_effect(f) == "3 of 3 (derived)"
    # 100 steps, 180 draft tokens: some steps drafted 1 token, others 3 (a per-batch-size table).
    f = figures_between(first, scrape(_vllm_page(100, 180, (70, 30, 10)), 10.0))
    assert f.k_in_effect == pytest.approx(1.8) and f.k_configured == 3
    assert f.per_position_acceptance is None and f.per_position_mixed
    assert figure_text(f, "per_position_acceptance") == MIXED
    assert "mixed: steps drafted 1.80 tokens on average of 3 positions" in f.notes["per_position_acceptance"]
    assert fmt_k_in_effect(f) == "1.8 of 3 (derived)"


@pytest.mark.parametrize(
    ("steps", "running", "shown"),
    [(3.0, 4, "3"), (1.0, 4, "1"), (None, 4, "–"), (3.0, 0, "–")],  # idle: the gauge goes stale
)
def test_sglang_tier_in_use_from_spec_num_steps(steps: float | None, running: float, shown: str) -> None:
    page = _sglang_spec_page(running, 10, 30, steps=steps)
    f = figures_between(scrape(page, 0.0), scrape(page, 5.0))
    assert fmt_k_in_effect(f) == shown and not f.k_in_effect_derived


# --- histogram quantiles, as Prometheus computes them ------------------------------------------------------

INF = math.inf
SAMPLE_TTFT = {0.02: 0.0, 0.04: 1.0, 0.06: 2.0, 0.08: 4.0, 0.1: 4.0, 0.25: 4.0, INF: 4.0}  # vLLM sample's Δ


@pytest.mark.parametrize(
    ("q", "buckets", "expected"),
    [
        (0.5, SAMPLE_TTFT, 0.06),  # the README's figures
        (0.9, SAMPLE_TTFT, 0.076),
        (0.95, SAMPLE_TTFT, 0.078),
        (0.5, {1.0: 10.0, INF: 10.0}, 0.5),  # the first bucket interpolates from zero
        (0.99, {1.0: 1.0, 2.0: 2.0, INF: 10.0}, 2.0),  # in the +Inf bucket: the highest finite bound
        (0.1, {-1.0: 5.0, 0.0: 6.0, INF: 6.0}, -1.0),  # a negative first bound is returned as is
        (-0.1, {1.0: 1.0, INF: 1.0}, -INF),  # q out of range, as Prometheus gives it
        (1.1, {1.0: 1.0, INF: 1.0}, INF),
        (math.nan, {1.0: 1.0, INF: 1.0}, None),
        (0.5, {}, None),
        (0.5, {INF: 5.0}, None),  # a single bucket
        (0.5, {1.0: 2.0, 2.0: 3.0}, None),  # no +Inf bucket
        (0.5, {1.0: 0.0, INF: 0.0}, None),  # no observations
    ],
)
def test_quantiles_as_prometheus_gives_them(
    q: float, buckets: dict[float, float], expected: float | None
) -> None:
    found = quantile_in_bucket(q, buckets)
    assert (found and found[0]) == (None if expected is None else pytest.approx(expected))


def test_non_monotonic_counts_are_fixed_up() -> None:
    # A dip (float noise, merged series) must not produce a quantile outside the buckets.
    found = quantile_in_bucket(0.5, {1.0: 4.0, 2.0: 3.9, 3.0: 8.0, INF: 8.0})
    assert found is not None and 1.0 <= found[0] <= 3.0


@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=10, unique=True),
    st.lists(st.floats(min_value=0, max_value=1e9), min_size=11, max_size=11),
    st.floats(min_value=0, max_value=1),
)
def test_quantile_stays_within_the_bounds(bounds: list[float], counts: list[float], q: float) -> None:
    bounds = sorted(bounds)
    cumulative = 0.0
    buckets = {}
    for bound, count in zip([*bounds, INF], counts, strict=False):
        cumulative += count
        buckets[bound] = cumulative
    found = quantile_in_bucket(q, buckets)
    if found is not None:
        value = found[0]
        assert min(0.0, bounds[0]) <= value <= max(bounds[-1], 0.0) or value == bounds[-1]
