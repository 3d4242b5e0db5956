"""Nothing from a kept burst file or a server error reaches the terminal raw on the A/B burst screen:
the history table, the verdict (greedy equivalence names the prompt) and the status line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench_fixtures import BenchTestApp
from test_injection import HOSTILE, assert_nothing_injected
from textual.pilot import Pilot
from textual.widgets import DataTable
from ui_waiting import wait_for

sys.path.insert(0, str(Path(__file__).parents[1]))

from test_sanitize_bench import hostile_burst

from tui.bench.burst_store import save_burst
from tui.screens.bench import BenchScreen
from tui.widgets.messages import BurstFailed

pytestmark = pytest.mark.usefixtures("bench_folders")


async def _shown(pilot: Pilot[None]) -> BenchScreen:
    """The burst screen with the hostile burst kept in its history."""
    screen = pilot.app.screen
    assert isinstance(screen, BenchScreen)
    await wait_for(pilot, lambda: screen.query_one("#history-table", DataTable).row_count == 1)
    return screen


async def test_bench_history_table() -> None:
    save_burst(hostile_burst(prompt_set=f"mix{HOSTILE}"))
    async with BenchTestApp([]).run_test(size=(100, 30)) as pilot:
        screen = await _shown(pilot)
        await pilot.press("h")
        await assert_nothing_injected(pilot, screen.query_one("#history-table"), "mixevil")  # type: ignore[arg-type]


async def test_bench_verdict() -> None:
    save_burst(hostile_burst())
    async with BenchTestApp([]).run_test(size=(100, 30)) as pilot:
        screen = await _shown(pilot)
        await pilot.press("h", "enter")  # show that burst
        await wait_for(pilot, lambda: screen.summary is not None)
        verdict = screen.query_one("#verdict")
        await assert_nothing_injected(pilot, verdict, "first divergence in p0evil")  # type: ignore[arg-type]


async def test_bench_status_line() -> None:
    save_burst(hostile_burst())
    async with BenchTestApp([]).run_test(size=(100, 30)) as pilot:
        screen = await _shown(pilot)
        screen.post_message(BurstFailed(f"HTTP 500: {HOSTILE}"))
        await assert_nothing_injected(pilot, screen.query_one("#status"), "HTTP 500: evil")  # type: ignore[arg-type]
