"""One figure vocabulary: the same Figures read the same on every screen and in `spectop snapshot`."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from recording_factory import write_recording
from ui_waiting import Replayed, press_into, press_then_pause

from tui.bench.report.summary import burst_summary
from tui.bench.report.text import render_text, table_rows
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord, RequestResult, ServerAcceptance
from tui.commands.snapshot import _Result, _table, fleet_table
from tui.fleet.poller import FleetReading
from tui.format import figure_text, fmt_latency
from tui.screens.detail import DetailScreen
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.series import EndpointSeries
from tui.widgets.card_view import CardData, compact_lines, roomy_lines
from tui.widgets.chart import TTFT_CHART, Chart, ChartSpec, chart_lines
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.endpoint_table import EndpointTable
from tui.widgets.figure_table import FigureTable, figure_rows

FIGURES = Figures(
    generation_tokens_per_s=2332.7, acceptance_rate=0.7123, mean_acceptance_length=2.4,
    per_position_acceptance=[0.8, 0.6], ttft_mean_s=0.0498, ttft_p50_s=0.0514, ttft_p95_s=0.0781,
    tpot_mean_s=0.0065, running=1.0, waiting=0.0, kv_cache_usage=0.25,
)  # fmt: skip
VALUE = r"(?:[<>~] ?)?(?:-?[\d.]+(?: ms| s|%|k)?|–)"


def _after(text: str, label: str) -> str:
    match = re.search(rf"{re.escape(label)}\s+({VALUE})", text)
    assert match is not None, f"{label!r} not in {text!r}"
    return match.group(1)


def _card() -> CardData:
    history = EndpointSeries(8)
    history.add(1.0, FIGURES)
    reading = EndpointReading(name="a", time=1.0, up=True, backend="vllm", figures=FIGURES)  # type: ignore[arg-type]
    return CardData(name="a", reading=reading, history=history, now=1.0)


def _snapshot() -> str:
    result = _Result("http://127.0.0.1:8000", 5.0)
    result.up, result.backend, result.figures = True, "vllm", FIGURES
    return "\n".join(_table(result))


def _burst() -> BurstResult:
    """One arm whose server said what FIGURES say: acceptance, mean length, and a TTFT p50 of 51.4 ms."""
    requests = [
        RequestResult(
            arm="a", index=index, prompt_id=f"p{index}", scheduled_s=index, sent_s=index,
            ttft_s=FIGURES.ttft_p50_s, e2e_s=1.0, chunk_times_s=[FIGURES.ttft_p50_s or 0.0, 1.0],
            chunk_chars=[4, 4], output_tokens=8,
        )
        for index in range(3)
    ]  # fmt: skip
    server = ServerAcceptance(
        acceptance_rate=FIGURES.acceptance_rate, mean_acceptance_length=FIGURES.mean_acceptance_length
    )
    arm = ArmResult(
        label="a", name="a", url="http://127.0.0.1:1", active_s=3.0, requests=requests, server=server
    )
    settings = BurstSettingsRecord(
        prompt_set="mixed",
        prompt_set_digest="mixed",
        requests=3,
        concurrency=1,
        max_tokens=8,
        temperature=0.0,
    )
    return BurstResult(
        started_at=datetime(2026, 12, 1, tzinfo=UTC), duration_s=3.0, settings=settings, arms=[arm]
    )


def test_acceptance_ttft_and_mean_length_read_the_same_everywhere() -> None:
    data = _card()
    compact = "\n".join(line.plain for line in compact_lines(data, 76))
    roomy = "\n".join(line.plain for line in roomy_lines(data, 116))
    table = dict(figure_rows(data))
    snapshot = _snapshot()
    snapshot_p50 = re.search(rf"TTFT mean/p50/p95\s+{VALUE} / ({VALUE}) /", snapshot)
    assert snapshot_p50 is not None
    charts = {
        key: chart_lines(ChartSpec(key, "$accent"), [1.0], [getattr(FIGURES, key)], 0.0, 2.0, 40, 3)[0].plain
        for key in ("acceptance_rate", "ttft_p50_s", "mean_acceptance_length")
    }
    summary = burst_summary(_burst())
    rows = {label: a for label, a, _ in table_rows(summary)}
    text = render_text(summary)
    fleet = FleetReading(
        instance="10.0.0.1:8000", name="a", time=1.0, up=True, backend="vllm", figures=FIGURES
    )
    header, line = fleet_table([fleet])[:2]
    fleet_cells = dict(zip(re.split(r"\s{2,}", header), re.split(r"\s{2,}", line), strict=True))
    surfaces = {
        "acceptance": {
            "card": _after(compact, "accept"),
            "roomy card": _after(roomy, "acceptance"),
            "detail table": table["acceptance"],
            "chart": _after(charts["acceptance_rate"], "acceptance"),
            "snapshot": _after(snapshot, "acceptance"),
            "bench table": rows["acceptance (server)"],
            "bench text": _after(text, "acceptance (server)"),
            "fleet": fleet_cells["accept"],
        },
        "TTFT p50": {
            "card": _after(compact, "TTFT"),
            "roomy card": _after(roomy, "TTFT p50"),
            "detail table": table["TTFT p50"],
            "chart": _after(charts["ttft_p50_s"], "TTFT p50"),
            "snapshot": snapshot_p50.group(1),
            "bench table": rows["TTFT p50"],
            "bench text": _after(text, "TTFT p50"),
        },
        "mean length": {
            "card": _after(compact, "len"),
            "roomy card": _after(roomy, "mean len"),
            "detail table": table["mean len"],
            "chart": _after(charts["mean_acceptance_length"], "mean len"),
            "snapshot": _after(snapshot, "mean len"),
            "bench table": rows["mean accept length"],
            "bench text": _after(text, "mean accept length"),
            "fleet": fleet_cells["len"],
        },
    }
    for figure, texts in surfaces.items():
        assert len(set(texts.values())) == 1, f"{figure} reads differently: {texts}"
    # the style picked for each kind: rates as %, latencies in ms, lengths with two decimals
    assert [next(iter(texts.values())) for texts in surfaces.values()] == ["71%", "51 ms", "2.40"]
    assert fmt_latency(FIGURES.ttft_p95_s) == figure_text(FIGURES, "ttft_p95_s") == fleet_cells["TTFT p95"]


def test_per_position_acceptance_reads_as_percent_everywhere() -> None:
    data = _card()
    for text in (
        dict(figure_rows(data))["per pos"],
        "\n".join(line.plain for line in roomy_lines(data, 116)),
    ):
        assert "80%" in text and "60%" in text and ".80" not in text
    assert "80% 60%" in _snapshot()


FIRST_BUCKET_NOTE = "inside the first bucket (≤ 0.1 s): below 0.1 s, interpolated"
LAST_BUCKET_NOTE = "above the highest bucket bound (10 s): at least 10 s"


def bounded_recording(path: Path) -> Path:
    """The snapshot tests' recording with TTFT quantiles as bucket bounds: on mtp-on, p50 (interpolated 50 ms)
    and p95 (95 ms) inside the first bucket (≤ 100 ms) for its last half; on mtp-off, p95 beyond the last
    bucket (> 10 s)."""
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
                    notes={"ttft_p95_s": FIRST_BUCKET_NOTE},
                )  # fmt: skip
        elif record.get("kind") == "reading" and record["name"] == "mtp-off":
            record["figures"].update(
                ttft_p95_s=10.0,
                quantile_bounds={"ttft_p95_s": [10.0, None]},
                notes={"ttft_p95_s": LAST_BUCKET_NOTE},
            )
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_every_screen_says_the_bound(tmp_path: Path, replayed: Replayed) -> None:
    recording = bounded_recording(tmp_path / "recording.jsonl")
    async with replayed((120, 36), replay_path=recording) as (pilot, app):
        await pilot.pause()
        cards = {card.endpoint: card.render().plain for card in app.screen.query(EndpointCard)}
        assert "TTFT p95 < 100 ms" in cards["mtp-on"] and "TTFT p50  < 100 ms" in cards["mtp-on"]
        assert "TTFT p95 > 10 s" in cards["mtp-off"]
        assert "95 ms" not in cards["mtp-on"] and "50 ms" not in cards["mtp-on"]
        assert "gaps: < 100 ms not plotted" in cards["mtp-on"]  # the card's TTFT chart
        await press_then_pause(pilot, "v")
        table = app.screen.query_one(EndpointTable)
        cells = {key: [cell.plain.strip() for cell in table.get_row(key)] for key in ("mtp-on", "mtp-off")}
        assert "< 100 ms" in cells["mtp-on"] and "> 10 s" in cells["mtp-off"]
        await press_then_pause(pilot, "v")
        await press_into(pilot, DetailScreen, "enter")
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
    assert series.bound_since("ttft_p50_s", 0.0) == (0.0, 0.1)
    assert series.bound_since("ttft_p50_s", 4.0) is None
    lines = chart_lines(TTFT_CHART, times[:4], values[:4], 0.0, 4.0, 60, 3, bound=(0.0, 0.1))
    assert "– < 100 ms: a bucket bound, not plotted" in lines[-1].plain
    beyond = chart_lines(TTFT_CHART, times[:4], values[:4], 0.0, 4.0, 60, 3, bound=(10.0, None))
    assert "> 10 s" in beyond[-1].plain
