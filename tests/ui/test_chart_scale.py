"""Sparklines and charts that do not lie: zero at the bottom, noise as a ripple, no solid
block from zero, and the range printed next to the picture."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tui.format import fmt_latency
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.series import EndpointSeries
from tui.widgets.card_view import CardData, compact_lines, roomy_lines
from tui.widgets.chart import GUTTER, SECONDS_FLOOR, SPARK_CHARS, Chart, ChartSpec, scale_for

BOTTOM, TOP = SPARK_CHARS[0], SPARK_CHARS[-1]


def _card(series: list[dict[str, float]]) -> CardData:
    history = EndpointSeries(64)
    for index, figures in enumerate(series):
        history.add(float(index), Figures(**figures))
    last = EndpointReading(name="a", time=float(len(series) - 1), up=True, figures=Figures(**series[-1]))  # type: ignore[arg-type]
    return CardData(name="a", reading=last, history=history, now=float(len(series)))


def _spark_of(line: str) -> str:
    return "".join(char for char in line if char in SPARK_CHARS)


def test_an_idle_endpoint_is_drawn_at_the_bottom_not_mid_height() -> None:
    data = _card([{"generation_tokens_per_s": 0.0}] * 30)
    compact = _spark_of(compact_lines(data, 80)[0].plain)
    assert compact and set(compact) == {BOTTOM}
    roomy = roomy_lines(data, 120)[0].plain
    assert set(_spark_of(roomy)) == {BOTTOM}
    assert "0.0–1.0" in roomy  # the range it is drawn on


def test_a_fraction_of_a_millisecond_of_noise_is_not_a_cliff() -> None:
    ttft = [0.0065 + (0.0001 if index % 2 else -0.0001) for index in range(30)]
    data = _card([{"ttft_p50_s": value, "generation_tokens_per_s": 50.0} for value in ttft])
    line = roomy_lines(data, 120)[1].plain
    drawn = _spark_of(line)
    assert len(drawn) >= 30
    levels = {SPARK_CHARS.index(char) for char in drawn}
    assert max(levels) - min(levels) <= 2  # a ripple in the middle, not bottom-to-top
    scale = scale_for(ttft, SECONDS_FLOOR)
    assert scale is not None and scale.high - scale.low >= 0.2 * max(ttft)
    assert scale.text(fmt_latency) in line


def test_a_real_change_still_spans_the_height() -> None:
    data = _card([{"generation_tokens_per_s": value} for value in [100.0] * 15 + [300.0] * 15])
    drawn = _spark_of(roomy_lines(data, 120)[0].plain)
    assert BOTTOM in drawn and TOP in drawn


def test_scale_never_goes_below_zero_for_a_non_negative_series() -> None:
    scale = scale_for([0.2, 0.25], floor=1.0)
    assert scale is not None and scale.low == 0.0 and scale.high >= 1.0
    assert scale_for([None, None]) is None
    fixed = scale_for([0.5, 0.51], low=0.0, high=1.0)
    assert fixed is not None and (fixed.low, fixed.high) == (0.0, 1.0)


class _ChartApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Chart(ChartSpec("ttft_p50_s", "$secondary", floor=SECONDS_FLOOR), id="chart")


async def test_detail_chart_of_ttft_is_not_a_solid_block_from_zero() -> None:
    app = _ChartApp()
    async with app.run_test(size=(40, 6)) as pilot:
        chart = app.query_one(Chart)
        chart.styles.height = 5
        times = [float(index) for index in range(40)]
        values: list[float | None] = [0.040 + (0.005 if index % 4 < 2 else -0.005) for index in range(40)]
        chart.set_values(times, values, 0.0, 39.0)
        await pilot.pause()
        lines = str(chart.render()).splitlines()
        rows = [line[GUTTER:] for line in lines[1:]]
        assert lines[1].startswith("  45 ms ") and lines[-1].startswith("  35 ms ")  # the axis it is drawn on
        assert not all(char == "█" for char in rows[-1].strip())  # the lows do not fill the bottom row
        assert any(char == "█" for char in rows[0])  # the highs reach the top
