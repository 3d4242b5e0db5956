"""Snapshots of the burst screen from fixed data: no clocks, no random figures, no tmp paths on screen."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from bench_fixtures import (
    MTP_OFF,
    MTP_ON,
    STARTED_AT,
    BenchTestApp,
    bench_screen,
    mtp_burst,
    recorded_arm,
    recorded_burst,
    until,
)
from textual.pilot import Pilot
from textual.widgets import DataTable

from tui.bench.burst_store import bursts_dir, save_burst
from tui.bench.results import BurstResult
from tui.settings import EndpointSettings

SIZES = [(80, 24), (120, 36), (200, 50)]
SIZE_IDS = [f"{width}x{height}" for width, height in SIZES]


async def _history_read(pilot: Pilot[Any]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.usefixtures("bench_folders")
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_bench_before_a_burst(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(BenchTestApp([MTP_OFF, MTP_ON]), terminal_size=size, run_before=_history_read)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_bench_after_a_burst(snap_compare: Any, recorded_run: BurstResult, size: tuple[int, int]) -> None:
    async def burst(pilot: Pilot[Any]) -> None:
        screen = bench_screen(pilot.app)
        await _history_read(pilot)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.summary is not None)
        await until(pilot, lambda: screen.query_one("#history-table", DataTable).row_count == 1)
        await _history_read(pilot)

    assert snap_compare(BenchTestApp([MTP_OFF, MTP_ON]), terminal_size=size, run_before=burst)


GPU_NODE = EndpointSettings(name="gpu-node", url="http://10.0.0.7:8000")


def _kept(minute: int, tokens_per_chunk: int, gap_s: float, acceptance: float | None) -> BurstResult:
    arm = recorded_arm("a", GPU_NODE, tokens_per_chunk, gap_s, acceptance)
    return recorded_burst([arm], started_at=datetime(2026, 11, 30, 2, minute, 0, tzinfo=UTC))


@pytest.fixture
def history(bench_folders: Path) -> None:
    save_burst(_kept(10, 1, 0.010, None))  # MTP off: one token per 10 ms
    save_burst(_kept(40, 2, 0.012, 0.71))  # MTP on: two tokens per 12 ms


def test_bench_comparison_80x24(snap_compare: Any, history: None) -> None:
    async def compare(pilot: Pilot[Any]) -> None:
        screen = bench_screen(pilot.app)
        await until(pilot, lambda: screen.query_one("#history-table", DataTable).row_count == 2)
        await pilot.press("h", "b", "down", "a", "ctrl+r")  # newest as B, the older one as A
        await until(pilot, lambda: screen.summary is not None)
        await pilot.pause()

    assert snap_compare(BenchTestApp([GPU_NODE]), terminal_size=(80, 24), run_before=compare)


@pytest.fixture
def kept_bursts(bench_folders: Path) -> None:
    """An A/B burst kept with its verdict, a one-arm burst of a long URL, and an A/B burst kept by an
    older spectop (no verdict field)."""
    save_burst(mtp_burst())
    far = EndpointSettings(name="far", url="http://inference-gpu-node-17.cluster.example.com:8443/v1")
    save_burst(
        recorded_burst([recorded_arm("a", far, 1, 0.010, None)], started_at=STARTED_AT.replace(hour=3))
    )
    older = json.loads(mtp_burst().model_dump_json(exclude={"verdict"}))
    (bursts_dir() / "burst-20261129-224000-000000.json").write_text(
        json.dumps(older | {"started_at": "2026-11-29T22:40:00Z"}), encoding="utf-8"
    )


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_bench_history(snap_compare: Any, kept_bursts: None, size: tuple[int, int]) -> None:
    async def history(pilot: Pilot[Any]) -> None:
        screen = bench_screen(pilot.app)
        await until(pilot, lambda: screen.query_one("#history-table", DataTable).row_count == 3)
        await pilot.press("h")
        await pilot.pause()

    assert snap_compare(BenchTestApp([MTP_OFF, MTP_ON]), terminal_size=size, run_before=history)
