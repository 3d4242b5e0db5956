"""The figure vocabulary (tui/format.py): one rule per kind of figure, "–" for what cannot be known."""

from __future__ import annotations

import math

import pytest

from tui.format import (
    FIGURES,
    UNKNOWN,
    figure_text,
    fmt_bound,
    fmt_count,
    fmt_duration,
    fmt_latency,
    fmt_latency_delta,
    fmt_length,
    fmt_per_s,
    fmt_quantile,
    fmt_rate,
    fmt_times,
    fmt_times_interval,
    fmt_tokens_per_s,
    note_lines,
    position_bars,
    window_text,
)
from tui.telemetry.figures import FIGURE_NAMES, Figures

FORMATTERS = (
    fmt_rate, fmt_length, fmt_latency, fmt_latency_delta, fmt_tokens_per_s, fmt_per_s, fmt_count,
    fmt_duration, fmt_times,
)  # fmt: skip


@pytest.mark.parametrize("formatter", FORMATTERS)
def test_what_cannot_be_known_is_a_dash_and_zero_is_zero(formatter: object) -> None:
    for unknown in (None, math.nan, math.inf, -math.inf):
        assert formatter(unknown) == UNKNOWN  # type: ignore[operator]
    assert formatter(0.0) not in (UNKNOWN, "")  # type: ignore[operator]
    assert "0" in formatter(0.0)  # type: ignore[operator]


def test_rates_are_whole_percent() -> None:
    """Above zero is never shown as zero; an impossible rate is shown as it is, not hidden."""
    cases = {0.71: "71%", 0.699194: "70%", 1.0: "100%", 0.0: "0%", 0.004: "<1%", 0.006: "1%", -0.05: "-5%"}
    assert {value: fmt_rate(value) for value in cases} == cases


def test_lengths_have_two_decimals() -> None:
    cases = {2.4: "2.40", 1.0: "1.00", -1.5: "-1.50"}
    assert {value: fmt_length(value) for value in cases} == cases


def test_latencies_in_ms_below_a_second_then_seconds_rounding_into_the_next_unit() -> None:
    """9.96 ms is "10 ms" (not "10.0 ms", 7 characters), 999.6 ms is "1.00 s" (not "1000 ms")."""
    cases = {
        0.051: "51 ms", 0.0514: "51 ms", 0.0065: "6.5 ms", 0.00085: "0.85 ms", 0.0: "0.00 ms",
        0.999: "999 ms", 1.2: "1.20 s", 12.5: "12.5 s", 125.0: "125 s", -0.051: "-51 ms", 0.00996: "10 ms",
        0.0099: "9.9 ms", 0.0009996: "1.0 ms", 0.00099: "0.99 ms", 0.9996: "1.00 s", 0.9994: "999 ms",
        9.996: "10.0 s", 99.96: "100 s", -0.9996: "-1.00 s",
    }  # fmt: skip
    assert {value: fmt_latency(value) for value in cases} == cases
    assert fmt_latency_delta(0.012) == "+12 ms" and fmt_latency_delta(-1.2) == "-1.20 s"


def test_token_rates_counts_and_request_rates() -> None:
    cases = {45.25: "45.2", 812.44: "812.4", 2332.7: "2.33k", 19_600.0: "19.6k", 123_456.0: "123k"}
    cases[-5.0] = "-5.0"
    assert {value: fmt_tokens_per_s(value) for value in cases} == cases
    assert fmt_count(3.0) == "3" and fmt_count(2.5) == "2.5" and fmt_count(0.0) == "0"
    assert fmt_per_s(0.25) == "0.25"


def test_durations_round_down_and_never_go_negative() -> None:
    cases = {0.4: "0 s", 8.9: "8 s", 90.0: "1 min", 3 * 60 + 59: "3 min", 2 * 3600: "2 h", 3 * 86400: "3 d"}
    cases |= {2 * 3600 + 5 * 60: "2 h 5 min", -5.0: "0 s"}  # a reading "from the future" is not an age
    assert {value: fmt_duration(value) for value in cases} == cases


def test_quantile_bounds_read_as_the_bound_they_are() -> None:
    assert fmt_quantile(0.05, (0.0, 0.1)) == "< 100 ms"
    assert fmt_quantile(10.0, (10.0, None)) == "> 10 s"
    assert fmt_quantile(12.0, (10.0, math.inf)) == "> 10 s"
    assert fmt_quantile(0.85, (0.5, 2.5)) == "~850 ms"
    assert fmt_quantile(0.06, None) == fmt_latency(0.06)
    assert fmt_quantile(None, (0.0, 0.1)) == UNKNOWN
    assert fmt_quantile(math.nan, (0.0, 0.1)) == UNKNOWN
    assert fmt_bound(0.0025) == "2.5 ms" and fmt_bound(2.5) == "2.5 s"


def test_per_position_bars_use_percent() -> None:
    assert position_bars([0.8, 0.6]) == "▆80% ▅60%"
    assert position_bars([1.0] * 8, limit=3).endswith("…")
    assert position_bars(None) == UNKNOWN and position_bars([]) == UNKNOWN
    assert position_bars([math.nan, 0.5]) == f"{UNKNOWN} ▄50%"


def test_window_text() -> None:
    assert window_text(8.0, 60.0, 12.0) == "restarted 12 s ago · window 8 s of 1 min"
    assert window_text(50.0, 60.0, None) is None
    # Its start unknown: before the new process' first reading, never "0 s ago".
    assert window_text(None, 60.0, None, 6.5) == "restarted over 6 s ago"
    assert window_text(8.0, 60.0, 12.0, 5.0) == "restarted 12 s ago · window 8 s of 1 min"


def test_the_vocabulary_covers_every_figure_and_notes_group_by_text() -> None:
    assert set(FIGURES) == set(FIGURE_NAMES)
    figures = Figures(
        acceptance_rate=0.71,
        ttft_p50_s=0.05,
        quantile_bounds={"ttft_p50_s": (0.0, 0.1)},
        notes={"mean_acceptance_length": "the server exports no verify steps", "tpot_mean_s": "no requests"},
    )
    assert figure_text(figures, "acceptance_rate") == "71%"
    assert figure_text(figures, "ttft_p50_s") == "< 100 ms"
    assert figure_text(figures, "mean_acceptance_length") == UNKNOWN
    assert note_lines({"a": "x", "tpot_mean_s": "x", "window": "short"}) == ["a, TPOT: x", "window: short"]


def test_ratios_of_two_figures_have_two_decimals_and_an_x() -> None:
    assert (fmt_times(1.8), fmt_times(0.5)) == ("1.80x", "0.50x")
    assert fmt_times_interval((1.7, 1.9)) == "1.70-1.90"
    assert fmt_times_interval(None) == fmt_times_interval((math.nan, 1.0)) == UNKNOWN
