"""The burst screen's history (h): each row shows the date, both URLs (or "one arm"), the verdict and
the prompt set, fitted to 80 columns (host:port kept) and fuller when wider; older files still list."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bench_fixtures import (
    MTP_OFF,
    MTP_ON,
    BenchTestApp,
    bench_screen,
    mtp_burst,
    recorded_arm,
    recorded_burst,
    text_of,
    until,
)
from textual.widgets import DataTable

from tui.bench.burst_store import bursts_dir, save_burst
from tui.bench.results import BurstResult
from tui.screens.bench import BenchScreen
from tui.settings import EndpointSettings

FAR = EndpointSettings(name="far", url="http://inference-gpu-node-17.cluster.example.com:8443/v1")


def _cells(screen: BenchScreen, row: int) -> list[str]:
    return [str(cell) for cell in screen.query_one("#history-table", DataTable).get_row_at(row)]


def _keep_as_older_spectop(result: BurstResult) -> Path:
    """`result` written as a spectop without kept verdicts wrote it (no verdict field)."""
    document = json.loads(result.model_dump_json())
    del document["verdict"]
    folder = bursts_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"burst-{result.started_at:%Y%m%d-%H%M%S-%f}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


async def test_a_burst_just_run_lists_with_both_urls_and_its_verdict(recorded_run: BurstResult) -> None:
    app = BenchTestApp([MTP_OFF, MTP_ON])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = bench_screen(app)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.summary is not None)
        table = screen.query_one("#history-table", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        await pilot.press("h")
        await pilot.pause()
        comparison = screen.summary.comparison if screen.summary else None
        assert comparison is not None and comparison.ci95 is not None
        low, high = comparison.ci95
        when, a_url, b_url, verdict, prompt_set, requests = _cells(screen, 0)
        assert when == f"{recorded_run.started_at:%m-%d %H:%M}"
        assert (a_url, b_url) == ("10.0.0.7:8000", "10.0.0.8:8000")  # http:// left out at 80 columns
        assert verdict == f"B {comparison.decode_tokens_per_s_ratio:.2f}x ({low:.2f}-{high:.2f})"
        assert (prompt_set, requests) == (
            recorded_run.settings.prompt_set,
            str(recorded_run.settings.requests),
        )
        assert table.virtual_size.width <= table.scrollable_content_region.width  # all in sight


@pytest.mark.usefixtures("bench_folders")
@pytest.mark.parametrize("width", [80, 200])
async def test_older_files_and_long_urls_list_in_80_columns_and_in_full_when_wide(width: int) -> None:
    _keep_as_older_spectop(mtp_burst())
    far = [recorded_arm("a", FAR, 1, 0.010, None)]
    save_burst(recorded_burst(far, started_at=datetime(2026, 11, 30, 3, 0, tzinfo=UTC)))
    app = BenchTestApp([MTP_OFF])
    async with app.run_test(size=(width, 24)) as pilot:
        screen = bench_screen(app)
        table = screen.query_one("#history-table", DataTable)
        await until(pilot, lambda: table.row_count == 2)
        await pilot.press("h")
        await pilot.pause()
        one_arm, older = _cells(screen, 0), _cells(screen, 1)
        assert one_arm[2] == "one arm" and one_arm[3] == "–"
        assert older[3] == "–"  # kept without a verdict: none guessed
        assert "–: no verdict kept" in text_of(screen, "#status")
        assert table.virtual_size.width <= table.scrollable_content_region.width
        if width == 80:
            assert one_arm[1].startswith("…") and one_arm[1].endswith("e.com:8443")
            assert older[0] == "11-30 02:40"
        else:
            assert one_arm[1] == FAR.url and (older[1], older[2]) == (MTP_OFF.url, MTP_ON.url)
            assert older[0] == "2026-11-30 02:40"
        await pilot.press("down", "enter")  # opening the older file computes its verdict
        await until(pilot, lambda: screen.summary is not None)
        assert "B is" in text_of(screen, "#verdict") and "faster" in text_of(screen, "#verdict")


@pytest.mark.usefixtures("bench_folders")
async def test_the_history_refits_when_the_terminal_is_resized() -> None:
    save_burst(recorded_burst([recorded_arm("a", FAR, 1, 0.010, None)]))
    app = BenchTestApp([MTP_OFF])
    async with app.run_test(size=(200, 24)) as pilot:
        screen = bench_screen(app)
        table = screen.query_one("#history-table", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        assert _cells(screen, 0)[1] == FAR.url
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: _cells(screen, 0)[1] != FAR.url)
        assert _cells(screen, 0)[1].endswith(":8443")


@pytest.mark.usefixtures("bench_folders")
async def test_more_bursts_than_rows_still_fit_beside_the_scroll_bar() -> None:
    for minute in range(20):
        arms = [recorded_arm("a", FAR, 1, 0.010, None), recorded_arm("b", FAR, 2, 0.012, 0.71)]  # both cut
        save_burst(recorded_burst(arms, started_at=datetime(2026, 11, 30, 4, minute, tzinfo=UTC)))
    app = BenchTestApp([MTP_OFF])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = bench_screen(app)
        table = screen.query_one("#history-table", DataTable)
        await until(pilot, lambda: table.row_count == 20)
        await pilot.press("h")
        await pilot.pause()
        assert table.virtual_size.height > table.scrollable_content_region.height  # it scrolls down
        assert table.virtual_size.width <= table.scrollable_content_region.width  # and not sideways
        assert _cells(screen, 0)[1].endswith(":8443") and _cells(screen, 0)[3].startswith("B ")
