"""Detail charts with axes: y range, time axis, restart and config markers; drawing alone, then the app."""

from __future__ import annotations

import re

from ui_waiting import spectop, wait_for

from tui.format import fmt_latency, fmt_rate
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.series import EndpointSeries
from tui.widgets.card_view import CardData, compact_lines, roomy_lines
from tui.widgets.chart import (
    ACCEPTANCE_CHART,
    GUTTER,
    SECONDS_FLOOR,
    SPARK_CHARS,
    TTFT_CHART,
    bucketed,
    chart_lines,
    chart_rows,
    marker_columns,
    scale_for,
    sparkline,
    time_axis,
)

TTFT, ACCEPTANCE = TTFT_CHART, ACCEPTANCE_CHART


def test_sparklines_scale_with_gaps_chart_rows_stack_and_buckets_average_fill_and_keep_outages() -> None:
    assert sparkline([1.0, None, 2.0, 3.0], 6, 1.0, 3.0) == "  ▁ ▅█"
    assert sparkline([], 4, 0.0, 1.0) == "    "
    assert sparkline([5.0, 5.0], 2, 5.0, 5.0) == "▅▅"  # flat stays flat, mid-height
    assert sparkline([9.0, 1.0, 2.0], 2, 1.0, 2.0) == "▁█"  # the newest values only
    rows = chart_rows([0.0, 1.0], 2, 2, 0.0, 1.0)  # blocks stacked from the bottom
    assert rows[1][1] == "█" and rows[0][1] == "█" and rows[0][0] == " "
    assert chart_rows([None], 1, 2, 0.0, 1.0) == [" ", " "]
    values: list[float | None] = [1.0, 3.0, None, 5.0, 7.0]
    assert bucketed([0.0, 1.0, 2.0, 6.0, 7.0], values, 0.0, 8.0, 4) == [2.0, None, None, 6.0]
    assert bucketed([0.0, 2.0], [1.0, 2.0], 0.0, 4.0, 4) == [1.0, 1.0, 2.0, 2.0]
    assert bucketed([3.0], [1.0], 0.0, 4.0, 4) == [None, None, None, 1.0]


def test_the_y_range_is_at_the_left_top_and_bottom() -> None:
    times = [float(t) for t in range(60)]
    values: list[float | None] = [0.040 + (0.005 if t % 4 < 2 else -0.005) for t in range(60)]
    lines = [line.plain for line in chart_lines(TTFT, times, values, 0.0, 60.0, 40, 4)]
    assert len(lines) == 4 and all(len(line) <= 40 for line in lines)
    scale = scale_for(bucketed(times, values, 0.0, 60.0, 40 - GUTTER), 0.001)
    assert scale is not None
    assert lines[1][:GUTTER].strip() == fmt_latency(scale.high)
    assert lines[-1][:GUTTER].strip() == fmt_latency(scale.low)
    assert lines[2][:GUTTER].strip() == ""
    assert lines[0].startswith("TTFT p50  ") and "(" not in lines[0]
    rows = [line[GUTTER:] for line in lines[1:]]  # not a solid block from zero:
    assert not all(char == "█" for char in rows[-1].strip())  # the lows do not fill the bottom row
    assert any(char == "█" for char in rows[0])  # the highs reach the top
    # one row: no room at the left for two labels, the range goes in the title
    one = [line.plain for line in chart_lines(ACCEPTANCE, times, [0.7] * 60, 0.0, 60.0, 40, 2)]
    assert f"({fmt_rate(0.0)}–{fmt_rate(1.0)})" in one[0]
    # nothing known: said so, no axis
    empty = [line.plain for line in chart_lines(TTFT, times, [None] * 60, 0.0, 60.0, 40, 3)]
    assert "no data in this window" in empty[-1] and empty[1][:GUTTER].strip() == ""


def test_markers_sit_at_the_column_of_their_time_in_the_chart_and_on_the_axis() -> None:
    start, end, width = 0.0, 300.0, 8 + 60  # 60 columns of 5 s
    markers = [(100.0, "restart"), (250.0, "config"), (400.0, "config")]  # the last is outside the window
    assert marker_columns(markers, start, end, 60) == {20: "restart", 50: "config"}
    times = [float(t) for t in range(0, 300, 5)]
    values: list[float | None] = [0.5] * 20 + [None] * 5 + [0.8] * 35  # down for 25 s after the restart
    lines = [line.plain for line in chart_lines(ACCEPTANCE, times, values, start, end, width, 4, markers)]
    for line in lines[1:]:
        assert line[GUTTER + 20] in "│▁▂▃▄▅▆▇█" and line[GUTTER + 50] in "│▁▂▃▄▅▆▇█"
    assert lines[1][GUTTER + 20] == "│"  # in the gap above the bars: a line
    assert lines[1][GUTTER + 19] == " "
    axis = time_axis(start, end, width, markers).plain
    assert len(axis) == width
    assert axis[GUTTER + 20] == "R" and axis[GUTTER + 50] == "C"
    assert axis.rstrip().endswith("now")
    assert axis[GUTTER:].startswith("-5 min")
    assert "-1 min" in axis or "-2 min" in axis  # ticks in between
    # a same-column restart wins over a config change (a save & restart also resets the counters)
    assert marker_columns([(100.0, "config"), (101.0, "restart")], start, end, 60) == {20: "restart"}


def test_history_keeps_restart_and_config_markers_once() -> None:
    history = EndpointSeries(16)
    history.add(10.0, Figures())
    history.add(11.0, Figures(restarted_in_window=True, restarted_s_ago=0.5))
    history.add(12.0, Figures(restarted_in_window=True, restarted_s_ago=1.5))  # the same restart, later
    history.mark(12.2, "config")
    history.mark(12.2, "config")
    # A restart whose start is unknown is marked at the new process' first reading.
    history.add(20.0, Figures(restarted_in_window=True, restart_seen_s_ago=2.0))
    assert list(history.markers) == [(10.5, "restart"), (12.2, "config"), (18.0, "restart")]
    history.add(13.0, None)
    assert list(history.up) == [True, True, True, True, False]


async def test_detail_screen_draws_axis_and_markers_of_a_config_change() -> None:
    from tui.screens.detail import DetailScreen
    from tui.settings import EndpointSettings
    from tui.widgets.chart import TimeAxis
    from tui.widgets.messages import RestartStarted

    endpoint = EndpointSettings(name="a", url="http://127.0.0.1:9")  # nothing listens: down, no network
    app = spectop(endpoint, poll_interval_s=2.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: len(app.series.endpoint("a")) > 0)
        app.post_message(RestartStarted(health_url="http://127.0.0.1:9/health"))
        await wait_for(pilot, lambda: any(kind == "config" for _, kind in app.series.endpoint("a").markers))
        app.push_screen(DetailScreen(app.context, "a"))
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen))
        await pilot.pause()
        axis = app.screen.query_one(TimeAxis).render().plain
        assert "C" in axis and "now" in axis
        assert "C config change" in str(app.screen.query_one("#charts-title").render())


def test_axis_ticks_fit_and_no_two_read_the_same_at_any_width() -> None:
    """At 200 columns a 5-minute axis once read "-5 min  -4 min  -4 min  -4 min …" (30 s ticks, minutes)."""
    for width in (20, 36, 60, 112, 150, 192, 300):
        for span in (31.0, 60.0, 300.0, 1800.0, 10800.0):
            axis = time_axis(0.0, span, width).plain
            assert len(axis) == width and axis.rstrip().endswith("now")
            words = [word for word in axis.split() if not word.isdigit()]  # the "30" of "-2 h 30 min"
            assert all(word == "now" or word.startswith("-") or word in ("min", "s", "h") for word in words)
            found = re.findall(r"-\d[^-]*?(?= {2,}|\s*$)", axis.replace("now", ""))
            labels = [label.strip() for label in found]
            assert len(labels) == len(set(labels)), (width, span, labels)
            # the window's start and at least one tick, where there is room
            assert len(labels) >= 2 or width < 60, (width, span, labels)


BOTTOM, TOP = SPARK_CHARS[0], SPARK_CHARS[-1]


def _card(series: list[dict[str, float]]) -> CardData:
    history = EndpointSeries(64)
    for index, figures in enumerate(series):
        history.add(float(index), Figures(**figures))
    last = EndpointReading(name="a", time=float(len(series) - 1), up=True, figures=Figures(**series[-1]))  # type: ignore[arg-type]
    return CardData(name="a", reading=last, history=history, now=float(len(series)))


def _spark_of(line: str) -> str:
    return "".join(char for char in line if char in SPARK_CHARS)


def test_sparklines_draw_idle_at_the_bottom_noise_as_a_ripple_and_a_real_change_bottom_to_top() -> None:
    data = _card([{"generation_tokens_per_s": 0.0}] * 30)  # idle: at the bottom, not mid-height
    compact = _spark_of(compact_lines(data, 80)[0].plain)
    assert compact and set(compact) == {BOTTOM}
    roomy = roomy_lines(data, 120)[0].plain
    assert set(_spark_of(roomy)) == {BOTTOM}
    assert "0.0–1.0" in roomy  # the range it is drawn on
    ttft = [0.0065 + (0.0001 if index % 2 else -0.0001) for index in range(30)]  # a fraction of a ms of noise
    data = _card([{"ttft_p50_s": value, "generation_tokens_per_s": 50.0} for value in ttft])
    line = roomy_lines(data, 120)[1].plain
    drawn = _spark_of(line)
    assert len(drawn) >= 30
    levels = {SPARK_CHARS.index(char) for char in drawn}
    assert max(levels) - min(levels) <= 2  # a ripple in the middle, not a cliff from bottom to top
    scale = scale_for(ttft, SECONDS_FLOOR)
    assert scale is not None and scale.high - scale.low >= 0.2 * max(ttft)
    assert scale.text(fmt_latency) in line
    data = _card([{"generation_tokens_per_s": value} for value in [100.0] * 15 + [300.0] * 15])
    drawn = _spark_of(roomy_lines(data, 120)[0].plain)
    assert BOTTOM in drawn and TOP in drawn  # a real change still spans the height


def test_scale_never_goes_below_zero_for_a_non_negative_series() -> None:
    scale = scale_for([0.2, 0.25], floor=1.0)
    assert scale is not None and scale.low == 0.0 and scale.high >= 1.0
    assert scale_for([None, None]) is None
    fixed = scale_for([0.5, 0.51], low=0.0, high=1.0)
    assert fixed is not None and (fixed.low, fixed.high) == (0.0, 1.0)
