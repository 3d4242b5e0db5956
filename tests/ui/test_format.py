"""Figure text: "–" for unknown (never 0), units, sparklines and bars."""

from __future__ import annotations

import math

from tui.widgets.format import (
    UNKNOWN,
    chart_rows,
    fmt_count,
    fmt_number,
    fmt_percent,
    fmt_ratio,
    fmt_seconds,
    position_bars,
    sparkline,
)


def test_unknown_is_a_dash_and_zero_is_zero() -> None:
    for formatter in (fmt_number, fmt_count, fmt_ratio, fmt_percent, fmt_seconds):
        assert formatter(None) == UNKNOWN
        assert formatter(math.nan) == UNKNOWN
        assert formatter(0.0) != UNKNOWN
    assert position_bars(None) == UNKNOWN


def test_units() -> None:
    assert fmt_seconds(0.0514) == "51.4ms"
    assert fmt_seconds(0.000_8) == "800µs"
    assert fmt_seconds(1.234) == "1.23s"
    assert fmt_number(594.94) == "594.9"
    assert fmt_number(2332.7) == "2.3k"
    assert fmt_percent(0.0057) == "0.6%"
    assert fmt_percent(0.475892) == "48%"
    assert fmt_ratio(0.699194) == "0.70"


def test_sparkline_scales_between_min_and_max_and_leaves_gaps() -> None:
    line = sparkline([1.0, None, 2.0, 3.0], 6)
    assert len(line) == 6
    assert line == "  ▁ ▅█"
    assert sparkline([], 4) == "    "
    assert sparkline([5.0, 5.0], 2) == "▅▅"  # flat stays flat, mid-height
    assert sparkline([0.5], 1, low=0.0, high=1.0) == "▅"


def test_sparkline_keeps_only_the_newest_values() -> None:
    assert sparkline([9.0, 1.0, 2.0], 2) == "▁█"


def test_chart_rows_stack_blocks_from_the_bottom() -> None:
    rows = chart_rows([0.0, 1.0], 2, 2, low=0.0)
    assert rows[1][1] == "█" and rows[0][1] == "█"
    assert rows[0][0] == " "
    assert chart_rows([None], 1, 2) == [" ", " "]


def test_position_bars_limits_positions() -> None:
    assert position_bars([0.8, 0.6]) == "▆.80 ▅.60"
    assert position_bars([1.0] * 8, limit=3).endswith("…")


def test_bucketed_averages_slices_fills_between_polls_and_keeps_outages() -> None:
    from tui.widgets.format import bucketed

    times = [0.0, 1.0, 2.0, 6.0, 7.0]
    values: list[float | None] = [1.0, 3.0, None, 5.0, 7.0]
    assert bucketed(times, values, 0.0, 8.0, 4) == [2.0, None, None, 6.0]
    # columns narrower than the poll interval repeat the slice before (no comb of gaps)
    assert bucketed([0.0, 2.0], [1.0, 2.0], 0.0, 4.0, 4) == [1.0, 1.0, 2.0, 2.0]
    # nothing before the first sample
    assert bucketed([3.0], [1.0], 0.0, 4.0, 4) == [None, None, None, 1.0]


def test_quantile_bounds_read_as_bounds() -> None:
    from tui.widgets.format import fmt_quantile, window_text

    assert fmt_quantile(0.05, (0.0, 0.1)) == "<100ms"
    assert fmt_quantile(10.0, (10.0, None)) == ">10s"
    assert fmt_quantile(1.2, (0.5, 2.5)) == "~1.2s"
    assert fmt_quantile(0.06, None) == fmt_seconds(0.06)
    assert fmt_quantile(None, (0.0, 0.1)) == UNKNOWN
    assert window_text(8.0, 60.0, 12.0) == "restarted 12s ago · window 8s of 60s"
    assert window_text(50.0, 60.0, None) is None
