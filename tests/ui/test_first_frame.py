"""The dashboard's first frame with figures imports only what it draws, and marks lifetime figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cut_figures import cut_figures
from textual.widgets import Static
from ui_waiting import card_texts, press_into, spectop, wait_for

from tests.telemetry.metrics_test_server import Reply, ReplyServer, sample_body
from tui.format import LIFETIME_CAVEAT, LIFETIME_LEGEND, LIFETIME_MARK
from tui.screens.help import HelpScreen
from tui.settings import EndpointSettings
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.endpoint_table import EndpointTable

TESTS = Path(__file__).resolve().parents[1]

NOT_BEFORE_THE_FIRST_FRAME = (
    "tui.advice.guard", "tui.advice.guard_control", "tui.screens.guard",  # the guard's: made in a thread
    "tui.tune.runner", "tui.sources.fleet", "tui.fleet.poller", "tui.configs.document", "tomlkit",
    "tui.telemetry.logs", "tui.bench.engine", "tui.sim", "tui.screens.detail", "tui.screens.editor",
    "rich._emoji_codes",  # markup parsed (the table's column headers)
    "click",  # httpx's command-line client (tui/__init__.py)
    "rich.progress",
)  # fmt: skip

SCRIPT = f"""
import asyncio, sys
sys.path[:0] = [{str(TESTS / "ui")!r}, {str(TESTS / "telemetry")!r}]
from metrics_test_server import Reply, ReplyServer, sample_body
from ui_waiting import wait_for
import tui.ui.app
from tui.ui.app import SpectopApp
from tui.paths import themes_dir
from tui.settings import EndpointSettings, Settings
from tui.widgets.endpoint_card import EndpointCard

tui.ui.app.GUARD_AFTER_FIGURES_S = tui.ui.app.GUARD_AT_THE_LATEST_S = 3600.0
WATCHED = {NOT_BEFORE_THE_FIRST_FRAME!r}

async def main():
    async with ReplyServer([Reply(sample_body("vllm", "metrics_t0.txt"))]) as server:
        endpoint = EndpointSettings(name="mimo", url=server.url, backend="vllm")
        settings = Settings(poll_interval_s=3600.0, endpoints=[endpoint])
        app = SpectopApp(settings, theme_folders=[themes_dir()], remember_theme_choice=False)
        async with app.run_test(size=(80, 24)) as pilot:
            card = lambda: app.screen.query_one(EndpointCard)
            await wait_for(pilot, lambda: card().data.reading is not None, "the first figures")
            await pilot.pause()
            print("imported:" + ",".join(name for name in WATCHED if name in sys.modules))
            transport = app.http_client._transport
            print(f"tls made:{{transport._tls is not None or transport._tls_made is not None}}")
            app._start_guard()
            await wait_for(pilot, lambda: app.guard is not None, "the guard")
            print("guard:" + ",".join(name for name in WATCHED[:3] if name in sys.modules))

asyncio.run(main())
"""


def test_the_first_frame_with_figures_imports_only_what_it_draws(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(TESTS.parent), "XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    assert lines["imported"] == "", f"imported before the first frame with figures: {lines['imported']}"
    assert lines["tls made"] == "False"  # the CA bundle is loaded for https:// endpoints only
    assert lines["guard"] == ",".join(NOT_BEFORE_THE_FIRST_FRAME[:3])  # then made, off the event loop


LIFETIME_ACCEPTANCE = f"70%{LIFETIME_MARK}"  # 1,430,743 / 2,041,330 accepted since the server started


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_first_frame_shows_lifetime_figures_until_the_second_scrape_and_the_help_says_so(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    replies = [Reply(sample_body("vllm", "metrics_t0.txt"))]
    async with ReplyServer(replies) as server:
        # one scrape at the start; the next only when the test asks (`poll_due`)
        app = spectop(EndpointSettings(name="mimo", url=server.url, backend="vllm"), poll_interval_s=3600.0)
        async with app.run_test(size=size) as pilot:
            card = app.screen.query_one(EndpointCard)
            await wait_for(pilot, lambda: card.data.reading is not None)
            await pilot.pause()
            (text,) = card_texts(app).values()
            assert LIFETIME_ACCEPTANCE in text and LIFETIME_CAVEAT in text
            assert f"2.40{LIFETIME_MARK}" in text  # mean length 1 + 1,430,743 / 1,020,665
            figures = card.data.figures
            assert figures.generation_tokens_per_s is None and figures.acceptance_rate is None
            assert not cut_figures(app, given=[LIFETIME_CAVEAT])

            await pilot.press("v")  # the table view marks them too
            await wait_for(pilot, lambda: bool(app.screen.query(EndpointTable)))
            table = app.screen.query_one(EndpointTable)
            cells = lambda: [str(cell) for row in range(table.row_count) for cell in table.get_row_at(row)]  # noqa: E731
            await wait_for(pilot, lambda: LIFETIME_ACCEPTANCE in " ".join(cells()))
            assert not cut_figures(app)
            await pilot.press("v")

            server.replies = [Reply(sample_body("vllm", "metrics_t1.txt"))]
            app.source.poll_due()  # type: ignore[attr-defined]  # the live source: the second scrape now
            await wait_for(pilot, lambda: card.data.figures.acceptance_rate is not None)
            await pilot.pause()
            (text,) = card_texts(app).values()
            assert LIFETIME_MARK not in text and LIFETIME_CAVEAT not in text
            assert "70%" in text  # 3,468 / 4,960 in the window (samples/vllm/README.md)

            await press_into(pilot, HelpScreen, "question_mark")  # the help explains the mark
            assert LIFETIME_LEGEND in str(app.screen.query_one("#notes", Static).render())
            assert not cut_figures(app, given=[LIFETIME_LEGEND])
