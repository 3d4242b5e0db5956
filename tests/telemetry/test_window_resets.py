"""ScrapeWindow: sliding window, counter resets (never negative, never a spike), column sums exact."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metrics_test_server import EPOCH, VLLM_LABELS, sample_body, scrape, vllm_page, window_figures

from tui.telemetry.backends.base import Delta
from tui.telemetry.figures import FIGURE_NAMES
from tui.telemetry.prometheus import parse_metrics_text
from tui.telemetry.scraper import Scrape
from tui.telemetry.window import ScrapeWindow, _Segment, _sum_segments


def page(generated: float, drafts: float = 0.0, accepted: float = 0.0, created: float | None = None) -> str:
    extra = "" if created is None else f"vllm:generation_tokens_created{{{VLLM_LABELS}}} {created}\n"
    return vllm_page(generated, drafts, accepted, extra, running=1)


def down(at: float) -> Scrape:
    return Scrape(time=at, monotonic=at, samples=None, error="connection refused", backend=None)


def test_rate_over_the_window_and_old_scrapes_leave_it() -> None:
    window = ScrapeWindow(window_s=30.0)
    for second in range(0, 61, 2):
        # 100 tok/s for the first 30 s, then 50 tok/s
        generated = 100.0 * min(second, 30) + 50.0 * max(0, second - 30)
        window.add(scrape(page(generated), float(second)))
        if second == 30:
            assert window.figures().generation_tokens_per_s == pytest.approx(100.0)
    assert window.figures().generation_tokens_per_s == pytest.approx(50.0)
    assert window.covered_s == pytest.approx(30.0)


def test_restart_at_an_unknown_time_has_no_rates_then_counts_from_its_first_reading() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(10_000.0, 400, 600), 0.0))
    window.add(scrape(page(10_500.0, 420, 630), 5.0))
    window.add(scrape(page(40.0, 2, 3), 10.0))  # the server restarted; the page has no start time
    f = window.figures()
    # Its 40 tokens are from some time after 5.0, not from 5.0 on (the old 40 / 5 s):
    # no rate, and why; the ratios of its counts from zero are fine.
    assert f.generation_tokens_per_s is None
    assert "restarted inside the window at a time not known" in f.notes["generation_tokens_per_s"]
    assert f.acceptance_rate == pytest.approx(3 / 4) and f.covered_s is None
    assert f.restarted_in_window and f.restarted_s_ago is None
    assert "between the readings 5 s and 0 s ago (start time unknown: the page has no" in f.notes["window"]
    window.add(scrape(page(540.0, 22, 33), 15.0))
    f = window.figures()
    # From the restart's first reading on: +500 in 5 s (the old figure, 540 / 10 s, was the bug).
    assert f.generation_tokens_per_s == pytest.approx(500 / 5)
    assert f.acceptance_rate == pytest.approx(30 / 40)
    assert f.restarted_in_window and f.restarted_s_ago is None and f.restart_seen_s_ago == pytest.approx(5.0)
    assert f.covered_s == pytest.approx(5.0)
    assert "restarted during the window" in f.notes["window"]
    assert "the figures count from its first reading (5 s ago)" in f.notes["window"]


def test_reset_right_after_the_first_scrape_is_not_negative_nor_a_spike() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(1e6), 0.0))
    window.add(scrape(page(50.0), 2.0))
    assert window.figures().generation_tokens_per_s is None  # not 50 / 2 s: it started after 0.0
    window.add(scrape(page(250.0), 4.0))
    assert window.figures().generation_tokens_per_s == pytest.approx(200 / 2)


def test_restart_seen_by_created_timestamp_counts_from_it() -> None:
    # The restart 6.5 s before the last read said "restarted 0 s ago", and the new
    # process' tokens were divided by the whole window.
    f = window_figures(
        scrape(page(100.0, created=EPOCH - 600), 0.0),
        scrape(page(5000.0, 10, 15, created=EPOCH + 3.5), 10.0),  # restarted, already past 100
    )
    assert f.generation_tokens_per_s == pytest.approx(5000 / 6.5) and f.restarted_in_window
    assert f.restarted_s_ago == pytest.approx(6.5) and f.covered_s == pytest.approx(6.5)
    assert f.acceptance_rate == pytest.approx(15 / 20)
    assert "(6 s ago, by vllm:generation_tokens_created)" in f.notes["window"]


def test_a_start_stamp_outside_the_readings_is_not_believed() -> None:
    f = window_figures(
        scrape(page(100.0, created=EPOCH - 600), 0.0),
        scrape(page(5000.0, created=EPOCH + 30), 10.0),  # the server's clock is ahead of ours
    )
    assert f.restarted_in_window and f.generation_tokens_per_s is None and f.restarted_s_ago is None
    assert "vllm:generation_tokens_created is not between the two readings" in f.notes["window"]


LLAMA = "llamacpp:tokens_predicted_total {}\nllamacpp:tokens_predicted_seconds_total 1\n"


def llama(tokens: int, at: float, process_start: str) -> Scrape:
    samples = scrape(LLAMA.format(tokens), at).samples
    return Scrape(EPOCH + at, at, samples, None, "llamacpp", process_start=process_start)


def test_restart_seen_by_llamacpp_process_start_header_on_this_clock() -> None:
    # Process-Start-Time-Unix is llama.cpp's monotonic clock in µs: on this machine, the readings' clock.
    f = window_figures(llama(10, 100.0, "40000000"), llama(900, 101.0, "100250000"))  # started at 100.25
    assert f.generation_tokens_per_s == pytest.approx(900 / 0.75) and f.restarted_in_window
    assert f.restarted_s_ago == pytest.approx(0.75)
    assert "by Process-Start-Time-Unix" in f.notes["window"]


def test_llamacpp_process_start_of_another_machine_is_a_restart_at_an_unknown_time() -> None:
    f = window_figures(llama(10, 100.0, "1000"), llama(900, 101.0, "2000"))
    assert f.restarted_in_window and f.generation_tokens_per_s is None and f.restarted_s_ago is None
    assert "the server runs on another machine" in f.notes["window"]


def test_no_data_is_none_not_zero_and_failed_scrapes_are_skipped() -> None:
    f = window_figures(scrape(page(0.0), 0.0), down(2.0), down(4.0), scrape(page(600.0), 6.0))
    assert f.generation_tokens_per_s == pytest.approx(100.0)
    window = ScrapeWindow(window_s=60.0)
    assert all(getattr(window.figures(), name) is None for name in FIGURE_NAMES)
    window.add(down(0.0))
    assert all(getattr(window.figures(), name) is None for name in FIGURE_NAMES)
    window.add(scrape(page(10.0), 1.0))
    f = window.figures()
    assert f.generation_tokens_per_s is None and f.running == 1.0


def test_a_different_server_on_the_url_clears_the_window_and_a_forced_backend_is_used() -> None:
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(1e6), 0.0))
    llama = "llamacpp:tokens_predicted_total {}\n"
    window.add(scrape(llama.format(10), 2.0))
    window.add(scrape(llama.format(30), 4.0))
    assert window.backend == "llamacpp"
    assert window.figures().generation_tokens_per_s == pytest.approx(10.0)
    forced = ScrapeWindow(window_s=60.0, backend="vllm")  # a forced backend needs no detection
    text = f"vllm:generation_tokens_total{{{VLLM_LABELS}}} 5\n"
    forced.add(Scrape(0.0, 0.0, tuple(parse_metrics_text(text)), None, None))
    assert forced.backend == "vllm"


def test_memory_is_bounded() -> None:
    window = ScrapeWindow(window_s=1e9, max_scrapes=50)
    for second in range(500):
        window.add(scrape(page(10.0 * second), float(second)))
    assert len(window) == 50
    assert window.figures().generation_tokens_per_s == pytest.approx(10.0)


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


def _one_by_one(segments: list[_Segment]) -> Delta:
    """The plain definition: every key added oldest segment first, starting from 0.0."""
    delta = Delta(seconds=0.0)
    for segment in segments:
        delta.seconds += segment.seconds
        for key, value in segment.counters.items():
            delta.counters[key] = delta.counters.get(key, 0.0) + value
        for key, value in segment.extras.items():
            delta.extras[key] = delta.extras.get(key, 0.0) + value
    return delta


def _bits(values: dict) -> list[tuple[object, str]]:
    return [(key, repr(value)) for key, value in values.items()]  # order and exact bits (repr round-trips)


_KEYS = [("q", (("engine", str(i)),), None) for i in range(4)] + [("b", (), 0.5)]
_VALUES = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.lists(_VALUES, min_size=len(_KEYS), max_size=len(_KEYS)), min_size=1, max_size=12),
    drop=st.lists(st.integers(min_value=0, max_value=len(_KEYS) - 1), max_size=3),
    seconds=st.floats(min_value=0.01, max_value=5.0),
)
def test_column_sums_are_bit_identical(rows: list[list[float]], drop: list[int], seconds: float) -> None:
    same_keys = [_Segment(seconds, dict(zip(_KEYS, row, strict=True)), {"x": row[0]}) for row in rows]
    # Some segments missing series (a new baseline, a series appearing late): the general path.
    mixed = [
        _Segment(seconds, {key: row[i] for i, key in enumerate(_KEYS) if i not in drop[:n]}, {})
        for n, row in enumerate(rows)
    ]
    for segments in (same_keys, mixed):
        fast, plain = _sum_segments(segments), _one_by_one(segments)
        assert fast is not None
        assert _bits(fast.counters) == _bits(plain.counters)
        assert _bits(fast.extras) == _bits(plain.extras)
        assert repr(fast.seconds) == repr(plain.seconds)


def test_figures_follow_every_add_even_when_read_in_between() -> None:
    scrapes = [scrape(vllm_page(10.0 * step * step, running=step), float(step)) for step in range(8)]
    scrapes.insert(4, scrape(vllm_page(1.0, running=9), 3.5))  # a restart: a counter went down
    read_often = ScrapeWindow(window_s=4.0)
    for count, reading in enumerate(scrapes, start=1):
        read_often.add(reading)
        read_often.add(Scrape(reading.time, reading.monotonic, None, "down", None))  # ignored
        read_once = ScrapeWindow(window_s=4.0)
        for earlier in scrapes[:count]:
            read_once.add(earlier)
        assert read_often.figures() == read_often.figures() == read_once.figures()
        assert read_often.figures_by_model() == read_once.figures_by_model() == {}


def test_per_model_figures_still_come_from_the_shared_sums() -> None:
    def two_models(step: int) -> str:
        return "".join(
            f'vllm:generation_tokens_total{{engine="0",model_name="{model}"}} {step * (index + 1) * 7.5}\n'
            for index, model in enumerate(("a", "b"))
        )

    window = ScrapeWindow(window_s=60.0)
    for step in range(5):
        window.add(scrape(two_models(step), float(step)))
    by_model = window.figures_by_model()
    assert set(by_model) == {"a", "b"}
    assert math.isclose(by_model["a"].generation_tokens_per_s or 0, 7.5)
    assert math.isclose(by_model["b"].generation_tokens_per_s or 0, 15.0)
    assert math.isclose(window.figures().generation_tokens_per_s or 0, 22.5)


def test_sample_pages_give_the_same_figures_as_the_plain_sums() -> None:
    texts = [sample_body("vllm", name).decode() for name in ("metrics_t0.txt", "metrics_t1.txt")]
    window = ScrapeWindow(window_s=60.0)
    for step, text in enumerate(texts):
        window.add(scrape(text, float(step * 10)))
    segments = [entry.segment for entry in list(window._entries)[1:] if entry.segment is not None]
    backend = window._backend
    assert backend is not None
    plain = backend.derive(_one_by_one(segments), window._entries[-1].page)
    figures = window.figures()
    assert figures.model_copy(update={"notes": plain.notes}) == plain.model_copy(
        update={"covered_s": figures.covered_s, "window_short": figures.window_short}
    )
