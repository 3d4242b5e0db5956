"""Nothing from a kept burst file or a server error reaches the terminal raw on the A/B burst screen: the
history table (the prompt set, the endpoints' URLs), the verdict (greedy equivalence names the prompt) and the
status line. Each is drawn to the bytes Textual would write to the terminal."""

from __future__ import annotations

import pytest
from bench_fixtures import BenchTestApp
from terminal_bytes import assert_nothing_injected
from textual.pilot import Pilot
from textual.widgets import DataTable
from ui_waiting import wait_for

from tests.untrusted import HOSTILE, hostile_burst
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
        await assert_nothing_injected(pilot, screen.query_one("#history-table"), "mixevil")


async def test_burst_history_row_with_a_hostile_endpoint_url() -> None:
    burst = hostile_burst()
    for arm in burst.arms:
        arm.url = f"http://e{HOSTILE}x:8000/v1"
    save_burst(burst)
    async with BenchTestApp([]).run_test(size=(140, 30)) as pilot:
        screen = await _shown(pilot)
        await pilot.press("h")
        await assert_nothing_injected(pilot, screen.query_one("#history-table"), "eevil")


async def test_bench_verdict() -> None:
    save_burst(hostile_burst())
    async with BenchTestApp([]).run_test(size=(100, 30)) as pilot:
        screen = await _shown(pilot)
        await pilot.press("h", "enter")  # show that burst
        await wait_for(pilot, lambda: screen.summary is not None)
        await assert_nothing_injected(pilot, screen.query_one("#verdict"), "first divergence in p0evil")


async def test_bench_status_line() -> None:
    save_burst(hostile_burst())
    async with BenchTestApp([]).run_test(size=(100, 30)) as pilot:
        screen = await _shown(pilot)
        screen.post_message(BurstFailed(f"HTTP 500: {HOSTILE}"))
        await assert_nothing_injected(pilot, screen.query_one("#status"), "HTTP 500: evil")
