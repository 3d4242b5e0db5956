"""The first reading shows the counters since the server started (`Figures.lifetime`)."""

from __future__ import annotations

import pytest
from metrics_test_server import sample_body, sample_scrapes, scrape, window_figures

from tui.format import LIFETIME_MARK, figure_text, lifetime_shown
from tui.telemetry.figures import Figures
from tui.telemetry.window import LIFETIME_NOTE, NEEDS_TWO_SCRAPES


def first_reading(backend: str) -> Figures:
    return window_figures(sample_scrapes(backend, 10.0)[0])


def test_vllm_first_reading_has_lifetime_figures_shown_with_the_mark_and_no_rates() -> None:
    figures = first_reading("vllm")
    lifetime = figures.lifetime
    assert lifetime is not None
    # metrics_t0.txt: the counters since the server started
    assert lifetime.acceptance_rate == pytest.approx(1.430743e06 / 2.04133e06)
    assert lifetime.mean_acceptance_length == pytest.approx(1 + 1.430743e06 / 1.020665e06)
    assert lifetime.per_position_acceptance == pytest.approx([817302 / 1.020665e06, 613441 / 1.020665e06])
    assert lifetime.prefix_cache_hit_rate == pytest.approx(1.69472e06 / 3.379794e06)
    assert lifetime.ttft_mean_s == pytest.approx(87.51540684700012 / 2074)
    assert lifetime.ttft_p50_s is not None and lifetime.ttft_p95_s is not None  # from the buckets since start
    # The window's own figures stay unknown: alerts, sparklines and the advisor read those.
    assert figures.acceptance_rate is None and figures.per_position_acceptance is None
    for rate in ("generation_tokens_per_s", "prompt_tokens_per_s", "requests_per_s"):
        assert getattr(figures, rate) is None and getattr(lifetime, rate) is None
        assert figures.notes[rate] == NEEDS_TWO_SCRAPES
    assert figures.notes["acceptance_rate"] == LIFETIME_NOTE
    assert figures.running == 3.0  # gauges are the window's from the first scrape on (t0: 3 running)
    # shown with the mark
    assert lifetime_shown(figures, "acceptance_rate")
    assert figure_text(figures, "acceptance_rate") == f"70%{LIFETIME_MARK}"
    assert figure_text(figures, "mean_acceptance_length") == f"2.40{LIFETIME_MARK}"
    assert figure_text(figures, "per_position_acceptance").endswith(f"60%{LIFETIME_MARK}")
    assert figure_text(figures, "ttft_p95_s").endswith(LIFETIME_MARK)
    assert figure_text(figures, "generation_tokens_per_s") == "–"  # never a lifetime rate
    assert not lifetime_shown(figures, "running")  # a gauge: the window's own


def test_second_scrape_replaces_the_lifetime_figures() -> None:
    figures = window_figures(*sample_scrapes("vllm", 10.0))
    assert figures.lifetime is None
    assert figures.acceptance_rate == pytest.approx(3468 / 4960)  # the window's, samples/vllm/README.md
    assert figures.generation_tokens_per_s == pytest.approx(594.9)
    assert NEEDS_TWO_SCRAPES not in figures.notes.values()
    assert figure_text(figures, "acceptance_rate") == "70%"


def test_sglang_first_reading_mean_length_from_its_counters() -> None:
    lifetime = first_reading("sglang").lifetime
    assert lifetime is not None
    assert lifetime.mean_acceptance_length == pytest.approx(4.790424e06 / 1.634194e06)
    assert lifetime.acceptance_rate == pytest.approx((4.790424e06 / 1.634194e06 - 1) / 3)


def test_llamacpp_lifetime_acceptance_before_any_draft_and_after_requests() -> None:
    # metrics_t0.txt is a fresh server: every spec counter 0, no lifetime figure to make up.
    figures = first_reading("llamacpp")
    assert figures.acceptance_rate is None
    assert figures.lifetime is None or figures.lifetime.acceptance_rate is None
    assert figure_text(figures, "acceptance_rate") == "–"
    # after requests (metrics_t1.txt)
    lifetime = window_figures(scrape(sample_body("llamacpp", "metrics_t1.txt").decode(), 5.0)).lifetime
    assert lifetime is not None
    assert lifetime.acceptance_rate == 1.0  # the identical draft model
    assert lifetime.mean_acceptance_length == pytest.approx(9.0)
    assert lifetime.per_position_acceptance == pytest.approx([1.0] * 8)


def test_impossible_lifetime_figure_is_dropped_and_said() -> None:
    page = (
        "vllm:spec_decode_num_drafts_total 10\n"
        "vllm:spec_decode_num_draft_tokens_total 20\n"
        "vllm:spec_decode_num_accepted_tokens_total 50\n"  # more accepted than drafted: a garbled page
    )
    figures = window_figures(scrape(page, 1.0))
    assert figure_text(figures, "acceptance_rate") == "–"
    assert "impossible value dropped" in figures.notes["acceptance_rate"]


def test_server_without_speculation_has_no_lifetime_acceptance() -> None:
    figures = window_figures(scrape("vllm:generation_tokens_total 500\nvllm:num_requests_running 1\n", 1.0))
    assert figures.lifetime is None
    assert figure_text(figures, "acceptance_rate") == "–"
    assert figures.notes["generation_tokens_per_s"] == NEEDS_TWO_SCRAPES
