"""ScrapeWindow: sliding window, counter resets (new baseline, never negative, never a spike), bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.telemetry.backends import detect_backend
from tui.telemetry.figures import FIGURE_NAMES
from tui.telemetry.prometheus import parse_metrics_text
from tui.telemetry.scraper import Scrape
from tui.telemetry.window import ScrapeWindow

LABELS = 'engine="0",model_name="m"'


def page(generated: float, drafts: float = 0.0, accepted: float = 0.0, created: float | None = None) -> str:
    text = (
        f"vllm:generation_tokens_total{{{LABELS}}} {generated}\n"
        f"vllm:spec_decode_num_drafts_total{{{LABELS}}} {drafts}\n"
        f"vllm:spec_decode_num_draft_tokens_total{{{LABELS}}} {drafts * 2}\n"
        f"vllm:spec_decode_num_accepted_tokens_total{{{LABELS}}} {accepted}\n"
        f"vllm:num_requests_running{{{LABELS}}} 1\n"
    )
    if created is not None:
        text += f"vllm:generation_tokens_created{{{LABELS}}} {created}\n"
    return text


def scrape(text: str, at: float) -> Scrape:
    samples = tuple(parse_metrics_text(text))
    return Scrape(time=at, monotonic=at, samples=samples, error=None, backend=detect_backend(samples))


def down(at: float) -> Scrape:
    return Scrape(time=at, monotonic=at, samples=None, error="connection refused", backend=None)


def test_rate_over_the_window() -> None:
    window = ScrapeWindow(window_s=60.0)
    for second in range(0, 31, 2):
        window.add(scrape(page(100.0 * second), float(second)))
    assert window.figures().generation_tokens_per_s == pytest.approx(100.0)
    assert window.span_s == pytest.approx(30.0)


def test_old_scrapes_leave_the_window() -> None:
    window = ScrapeWindow(window_s=10.0)
    for second in range(0, 21):
        # 10 tok/s for the first 10 s, then 50 tok/s
        generated = 10.0 * min(second, 10) + 50.0 * max(0, second - 10)
        window.add(scrape(page(generated), float(second)))
    assert window.figures().generation_tokens_per_s == pytest.approx(50.0)
    assert window.span_s == pytest.approx(10.0)


def test_counter_reset_counts_from_zero_and_starts_the_figures_afresh() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(10_000.0, 400, 600), 0.0))
    window.add(scrape(page(10_500.0, 420, 630), 5.0))
    window.add(scrape(page(40.0, 2, 3), 10.0))  # the server restarted
    window.add(scrape(page(540.0, 22, 33), 15.0))
    f = window.figures()
    # Like increase(): the restart segment counts the new process' 40 tokens, then +500; nothing before.
    assert f.generation_tokens_per_s == pytest.approx(540 / 10)
    assert f.acceptance_rate == pytest.approx(33 / 44)
    assert f.restarted_in_window and f.restarted_s_ago == pytest.approx(5.0)
    assert f.covered_s == pytest.approx(10.0)
    assert "restarted during the window" in f.notes["window"]


def test_reset_right_after_the_first_scrape_is_not_negative_nor_a_spike() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(1e6), 0.0))
    window.add(scrape(page(50.0), 2.0))
    assert window.figures().generation_tokens_per_s == pytest.approx(50 / 2)
    window.add(scrape(page(250.0), 4.0))
    assert window.figures().generation_tokens_per_s == pytest.approx(250 / 4)


def test_restart_seen_by_created_timestamp_even_when_counters_grew() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(100.0, created=1.7e9), 0.0))
    window.add(scrape(page(5000.0, created=1.7e9 + 60), 10.0))  # restarted and already past 100
    f = window.figures()
    assert f.generation_tokens_per_s == pytest.approx(5000 / 10) and f.restarted_in_window


def test_restart_seen_by_llamacpp_process_start_header() -> None:
    text = "llamacpp:tokens_predicted_total {}\nllamacpp:tokens_predicted_seconds_total 1\n"
    window = ScrapeWindow(window_s=60.0)
    first = scrape(text.format(10), 0.0)
    window.add(Scrape(0.0, 0.0, first.samples, None, "llamacpp", process_start="1000"))
    second = scrape(text.format(900), 1.0)
    window.add(Scrape(1.0, 1.0, second.samples, None, "llamacpp", process_start="2000"))
    f = window.figures()
    assert f.generation_tokens_per_s == pytest.approx(900.0) and f.restarted_in_window


def test_failed_scrapes_are_skipped() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(0.0), 0.0))
    window.add(down(2.0))
    window.add(down(4.0))
    window.add(scrape(page(600.0), 6.0))
    assert window.figures().generation_tokens_per_s == pytest.approx(100.0)


def test_no_data_is_none_not_zero() -> None:
    window = ScrapeWindow(window_s=60.0)
    assert all(getattr(window.figures(), name) is None for name in FIGURE_NAMES)
    window.add(down(0.0))
    assert all(getattr(window.figures(), name) is None for name in FIGURE_NAMES)
    window.add(scrape(page(10.0), 1.0))
    f = window.figures()
    assert f.generation_tokens_per_s is None and f.running == 1.0


def test_a_different_server_on_the_url_clears_the_window() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(1e6), 0.0))
    llama = "llamacpp:tokens_predicted_total {}\n"
    window.add(scrape(llama.format(10), 2.0))
    window.add(scrape(llama.format(30), 4.0))
    assert window.backend == "llamacpp"
    assert window.figures().generation_tokens_per_s == pytest.approx(10.0)


def test_memory_is_bounded() -> None:
    window = ScrapeWindow(window_s=1e9, max_scrapes=50)
    for second in range(500):
        window.add(scrape(page(10.0 * second), float(second)))
    assert len(window) == 50
    assert window.figures().generation_tokens_per_s == pytest.approx(10.0)


def test_forced_backend_is_used() -> None:
    window = ScrapeWindow(window_s=60.0, backend="vllm")
    text = f"vllm:generation_tokens_total{{{LABELS}}} 5\n"
    window.add(Scrape(0.0, 0.0, tuple(parse_metrics_text(text)), None, None))
    assert window.backend == "vllm"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=1e9), st.floats(min_value=0.1, max_value=30)), max_size=30
    )
)
def test_rates_are_never_negative_nor_above_the_largest_segment_rate(
    points: list[tuple[float, float]],
) -> None:
    window = ScrapeWindow(window_s=1e9)
    now = 0.0
    previous: float | None = None
    largest = 0.0
    for value, gap in points:
        now += gap
        if previous is not None:
            # After a reset the new value is the increase (counted from zero).
            largest = max(largest, (value - previous if value >= previous else value) / gap)
        previous = value
        window.add(scrape(page(value), now))
    rate = window.figures().generation_tokens_per_s
    if rate is not None:
        assert 0.0 <= rate <= largest * (1 + 1e-9) + 1e-9
