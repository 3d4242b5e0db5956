"""vLLM `/metrics` variants of reference vllm.md §1 the sample pages do not show, made by rewriting the
sample text as those servers print it. Expected values are the sample README's (acceptance 3,468 / 4,960,
mean length 1 + 3,468 / 2,480, TTFT mean 0.2056565 / 4, prefix hit 4,096 / 8,607)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "telemetry"))
from metrics_test_server import sample_body, scrape

from tui.telemetry.figures import Figures
from tui.telemetry.window import figures_between

T0 = sample_body("vllm", "metrics_t0.txt").decode()
T1 = sample_body("vllm", "metrics_t1.txt").decode()
ENGINE_0 = 'engine="0"'


def _figures(first: str, last: str) -> Figures:
    return figures_between(scrape(first, 100.0), scrape(last, 110.0))


def _assert_sample_ratios(f: Figures) -> None:
    assert (f.acceptance_rate, f.mean_acceptance_length) == pytest.approx((3468 / 4960, 1 + 3468 / 2480))
    assert f.per_position_acceptance == pytest.approx([1981 / 2480, 1487 / 2480])
    assert (f.ttft_mean_s, f.tpot_mean_s) == pytest.approx((0.2056565284729004 / 4, 0.021173870957087004 / 5))
    assert f.prefix_cache_hit_rate == pytest.approx(4096 / 8607)


def _with_second_engine(page: str) -> str:
    """A DP = 2 page: every `engine="0"` series printed again for engine 1 (vllm.md §1.3, #24049)."""
    lines = []
    for line in page.splitlines():
        lines.append(line)
        if ENGINE_0 in line and not line.startswith("#"):
            lines.append(line.replace(ENGINE_0, 'engine="1"'))
    return "\n".join(lines) + "\n"


def test_dp_engines_sum_counts_and_keep_the_ratios_and_per_position() -> None:
    f = _figures(_with_second_engine(T0), _with_second_engine(T1))
    assert f.generation_tokens_per_s == pytest.approx(2 * 594.9)
    assert f.requests_per_s == pytest.approx(2 * 0.5)
    _assert_sample_ratios(f)
    assert (f.running, f.waiting) == (4.0, 0.0)  # 2 per engine, summed
    assert f.kv_cache_usage == pytest.approx(0.005718747362201401)  # a fraction: averaged


def test_waiting_by_reason_is_a_split_of_waiting_not_added_to_it() -> None:
    """`num_requests_waiting` already includes the deferred requests; the by-reason gauge splits it."""

    def busy(page: str) -> str:
        page = page.replace('vllm:num_requests_waiting{engine="0",model_name="mimo-7b"} 0.0', "X")
        page = page.replace('reason="capacity"} 0.0', 'reason="capacity"} 2.0')
        page = page.replace('reason="deferred"} 0.0', 'reason="deferred"} 1.0')
        return page.replace("X", 'vllm:num_requests_waiting{engine="0",model_name="mimo-7b"} 3.0')

    f = _figures(busy(T0), busy(T1))
    assert f.waiting == 3.0


def _with_deprecated_names(page: str) -> str:
    """A ~v0.10 page (at 005a810b): the deprecated names exported beside the new ones, same values."""
    renames = {
        "vllm:kv_cache_usage_perc{": "vllm:gpu_cache_usage_perc{",
        "vllm:prefix_cache_queries_total{": "vllm:gpu_prefix_cache_queries_total{",
        "vllm:prefix_cache_hits_total{": "vllm:gpu_prefix_cache_hits_total{",
        "vllm:inter_token_latency_seconds_": "vllm:time_per_output_token_seconds_",
    }
    lines = []
    for line in page.splitlines():
        lines.append(line)
        for new, old in renames.items():
            if line.startswith(new):
                lines.append(old + line[len(new) :])
    return "\n".join(lines) + "\n"


def test_deprecated_names_beside_the_new_ones_are_not_counted_twice() -> None:
    plain = _figures(T0, T1)
    both = _figures(_with_deprecated_names(T0), _with_deprecated_names(T1))
    assert both == plain
    _assert_sample_ratios(both)
    assert both.kv_cache_usage == pytest.approx(0.005718747362201401)


def test_diffusion_counters_are_not_speculative_decoding() -> None:
    """A diffusion LLM exposes `vllm:diffusion_num_*` instead of the spec counters (vllm.md §1.3):
    no acceptance figure may come from them."""

    def diffusion(page: str) -> str:
        page = page.replace("vllm:spec_decode_num_drafts", "vllm:diffusion_num_denoising_steps")
        page = page.replace("vllm:spec_decode_num_draft_tokens", "vllm:diffusion_num_canvas_positions")
        page = page.replace("vllm:spec_decode_num_accepted_tokens_per_pos", "vllm:x_removed")
        page = page.replace("vllm:spec_decode_num_accepted_tokens", "vllm:diffusion_num_committed_tokens")
        return page

    f = _figures(diffusion(T0), diffusion(T1))
    assert f.generation_tokens_per_s == pytest.approx(594.9)
    assert f.acceptance_rate is None
    assert f.mean_acceptance_length is None
    assert f.per_position_acceptance is None


def _without(page: str, *prefixes: str) -> str:
    return "\n".join(line for line in page.splitlines() if not line.startswith(prefixes)) + "\n"


def test_spec_decoding_off_says_why_the_acceptance_is_unknown() -> None:
    """`SpecDecodingProm.__init__` returns early without `--speculative-config` (vllm.md §1.1): the
    page has no spec_decode family at all, which is a reason, not an idle window."""
    off = [_without(page, "vllm:spec_decode_") for page in (T0, T1)]
    f = _figures(*off)
    assert f.generation_tokens_per_s == pytest.approx(594.9)
    assert f.acceptance_rate is None and f.mean_acceptance_length is None
    assert f.per_position_acceptance is None
    for name in ("acceptance_rate", "mean_acceptance_length", "per_position_acceptance"):
        assert "--speculative-config" in f.notes[name]
    assert "acceptance_rate" not in _figures(T0, T1).notes  # spec on: nothing to explain
    idle = _figures(T1, T1)  # spec on but no drafts in the window: unknown, but not "off"
    assert idle.acceptance_rate is None and "acceptance_rate" not in idle.notes


def test_v1_before_the_drafts_counter_says_why_the_mean_length_is_unknown() -> None:
    """V1 spec counters first had draft/accepted tokens only (#15151, 2025-04-01); num_drafts and the
    per-position family came on 2025-04-24 (#16665)."""
    early = [
        _without(page, "vllm:spec_decode_num_drafts", "vllm:spec_decode_num_accepted_tokens_per_pos")
        for page in (T0, T1)
    ]
    f = _figures(*early)
    assert f.acceptance_rate == pytest.approx(3468 / 4960)
    assert "acceptance_rate" not in f.notes
    assert f.mean_acceptance_length is None and f.per_position_acceptance is None
    assert "spec_decode_num_drafts" in f.notes["mean_acceptance_length"]
    assert "spec_decode_num_drafts" in f.notes["per_position_acceptance"]


def test_v0_lifetime_gauges_are_marked_lifetime() -> None:
    """V0 (vllm.md §1.4): `vllm:spec_decode_draft_acceptance_rate` and `vllm:gpu_prefix_cache_hit_rate`
    gauges, labelled `model_name` only, used when no counter says more."""
    page = (
        "# HELP vllm:spec_decode_draft_acceptance_rate Speulative token acceptance rate.\n"
        "# TYPE vllm:spec_decode_draft_acceptance_rate gauge\n"
        'vllm:spec_decode_draft_acceptance_rate{model_name="facebook/opt-6.7b"} 0.642\n'
        "# TYPE vllm:gpu_prefix_cache_hit_rate gauge\n"
        'vllm:gpu_prefix_cache_hit_rate{model_name="facebook/opt-6.7b"} 0.9435\n'
    )
    f = _figures(page, page)
    assert (f.acceptance_rate, f.prefix_cache_hit_rate) == (0.642, 0.9435)
    assert "lifetime" in f.notes["acceptance_rate"] and "lifetime" in f.notes["prefix_cache_hit_rate"]
    assert f.mean_acceptance_length is None and "spec_decode_num_drafts" in f.notes["mean_acceptance_length"]
