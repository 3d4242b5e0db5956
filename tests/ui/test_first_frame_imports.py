"""The dashboard's first frame with figures imports only what it draws.

In a fresh interpreter (what a user's `spectop --endpoint URL` is), one endpoint scraped once from a real
local server: once its card shows the figures, none of the modules of other screens and modes is
imported (the guard and the tuner, fleet mode, the editors, the log grammars, the bench engine, the
simulator, httpx's command-line client), no TLS context was made for a plain http:// endpoint, and the
table's headers were not read as markup. The guard's own modules come a while after the first figures
(tui/app.py), in a thread: here its timers are set far off, so that only what else would pull them in
is seen; then it is made.
See tests/bench/bench_dashboard_first_frame.py for the times.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

NOT_BEFORE_THE_FIRST_FRAME = (
    "tui.advice.guard",
    "tui.advice.guard_control",
    "tui.screens.guard",
    "tui.tune.runner",
    "tui.sources.fleet",
    "tui.fleet.poller",
    "tui.configs.document",
    "tomlkit",
    "tui.telemetry.logs",
    "tui.bench.engine",
    "tui.sim",
    "tui.screens.detail",
    "tui.screens.editor",
    "rich._emoji_codes",  # markup parsed (the table's column headers)
    "click",  # httpx's command-line client (tui/__init__.py)
    "rich.progress",
)

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
