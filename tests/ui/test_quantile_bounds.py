"""One rule wherever a quantile appears. A quantile inside the first bucket reads as the
bound ("< 100 ms"), beyond the last as "> 10 s", on the card, the table view, the detail table and
`spectop snapshot` alike; the charts leave such samples out (a gap) and say why, never plotting the
interpolated value (95 ms, or 50 ms for a p50) as if it were measured."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from recording_factory import write_recording
from ui_waiting import wait_for

from tui.screens.detail import DetailScreen
from tui.telemetry.figures import Figures
from tui.telemetry.series import EndpointSeries
from tui.ui.app import SpectopApp
from tui.widgets.chart import TTFT_CHART, Chart, chart_lines
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.endpoint_table import EndpointTable
from tui.widgets.figure_table import FigureTable


def bounded(path: Path) -> Path:
    """mtp-on: TTFT p50 (interpolated 50 ms) and p95 (95 ms) inside the first bucket (≤ 100 ms) for the
    last half of the recording; mtp-off: p95 beyond the last bucket (> 10 s)."""
    write_recording(path)
    lines = []
    readings = 0
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "reading" and record["name"] == "mtp-on":
            readings += 1
            if readings > 60:
                record["figures"].update(
                    ttft_p50_s=0.05, ttft_p95_s=0.095,
                    quantile_bounds={"ttft_p50_s": [0.0, 0.1], "ttft_p95_s": [0.0, 0.1]},
                )  # fmt: skip
        elif record.get("kind") == "reading" and record["name"] == "mtp-off":
            record["figures"].update(ttft_p95_s=10.0, quantile_bounds={"ttft_p95_s": [10.0, None]})
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_every_screen_says_the_bound(tmp_path: Path, replay_app: Callable[..., SpectopApp]) -> None:
    app = replay_app(replay_path=bounded(tmp_path / "recording.jsonl"))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.replay_done)
        await pilot.pause()
        cards = {card.endpoint: card.render().plain for card in app.screen.query(EndpointCard)}
        assert "TTFT p95 < 100 ms" in cards["mtp-on"] and "TTFT p50  < 100 ms" in cards["mtp-on"]
        assert "TTFT p95 > 10 s" in cards["mtp-off"]
        assert "95 ms" not in cards["mtp-on"] and "50 ms" not in cards["mtp-on"]
        assert "gaps: < 100 ms not plotted" in cards["mtp-on"]  # the card's TTFT chart
        await pilot.press("v")
        await pilot.pause()
        table = app.screen.query_one(EndpointTable)
        cells = {key: [cell.plain.strip() for cell in table.get_row(key)] for key in ("mtp-on", "mtp-off")}
        assert "< 100 ms" in cells["mtp-on"] and "> 10 s" in cells["mtp-off"]
        await pilot.press("v")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen))
        await pilot.pause()
        figures = app.screen.query_one(FigureTable).render().plain
        assert "TTFT p50 < 100 ms" in " ".join(figures.split()) and "< 100 ms" in figures.split("TTFT p95")[1]
        chart = app.screen.query_one("#chart-ttft", Chart)
        text = chart.render().plain
        assert text.startswith("TTFT p50  < 100 ms") and "gaps: < 100 ms: a bucket bound, not plotted" in text
        assert 0.05 not in chart.values  # never plotted as if measured


def test_a_series_keeps_bounds_as_gaps_and_a_chart_of_only_bounds_says_why() -> None:
    series = EndpointSeries(16)
    for step in range(4):
        series.add(float(step), Figures(ttft_p50_s=0.05, quantile_bounds={"ttft_p50_s": (0.0, 0.1)}))
    series.add(
        4.0, Figures(ttft_p50_s=0.2, quantile_bounds={"ttft_p50_s": (0.1, 0.25)})
    )  # "~200 ms": a value
    times, values = series.window("ttft_p50_s", 0.0)
    assert values == [None, None, None, None, 0.2]
    assert (
        series.bound_since("ttft_p50_s", 0.0) == (0.0, 0.1) and series.bound_since("ttft_p50_s", 4.0) is None
    )
    lines = chart_lines(TTFT_CHART, times[:4], values[:4], 0.0, 4.0, 60, 3, bound=(0.0, 0.1))
    assert "– < 100 ms: a bucket bound, not plotted" in lines[-1].plain
    beyond = chart_lines(TTFT_CHART, times[:4], values[:4], 0.0, 4.0, 60, 3, bound=(10.0, None))
    assert "> 10 s" in beyond[-1].plain
