"""Nothing from a server or a log file reaches the terminal raw: the dashboard card, its toasts, the detail
screen with its log pane, and the alerts screen, rendered to the bytes Textual would write to the terminal.

The model name on a real local /metrics server and an OOM line in a real log file carry an OSC that
retitles the pane, a CSI that clears the screen, an OSC 52 clipboard write, an 8-bit CSI and a bidi override.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Header
from textual.widgets._toast import Toast
from ui_waiting import wait_for

sys.path.insert(0, str(Path(__file__).parents[1]))
sys.path.insert(0, str(Path(__file__).parents[1] / "telemetry"))

from metrics_test_server import Reply, ReplyServer

from tests.cli.test_sanitize_cli import HOSTILE, OOM_LINE, hostile_page
from tui.paths import themes_dir
from tui.screens.alerts import AlertsScreen
from tui.screens.detail import DetailScreen
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.ui.app import SpectopApp
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.log_pane import LogPane

# What the data would put on the terminal; Textual's own output is CSI colour / cursor codes only.
FROM_THE_DATA = ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\u202e", "PWNED", "aGVsbG8=")


def terminal_output(app: SpectopApp) -> str:
    """The full frame exactly as the app would write it to the terminal (what `_display` sends)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", legacy_windows=False, safe_box=False)  # fmt: skip
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return update.render_segments(console)


def region_text(app: SpectopApp, widget: Widget) -> str:
    """The characters drawn in `widget`'s region of the screen (segment text, controls and all)."""
    strips = app.screen._compositor.render_strips()
    region = widget.region
    lines = strips[region.y : region.bottom]
    return "\n".join("".join(s.text for s in line.crop(region.x, region.right)) for line in lines)


async def assert_nothing_injected(pilot: Pilot[Any], widget: Widget, shown: str) -> None:
    """Once `shown` (or anything raw) is drawn in `widget`: the text is there and nothing raw anywhere."""
    app = pilot.app

    def flat(drawn: str) -> str:  # a wrapped text (an alert row) read as one line; spaces only
        return re.sub(r" *\n *", " ", drawn)

    def settled() -> bool:
        drawn = region_text(app, widget)
        return shown in flat(drawn) or any(raw in drawn for raw in FROM_THE_DATA)

    await wait_for(pilot, settled, timeout_s=10.0)
    drawn = region_text(app, widget)
    assert shown in flat(drawn)  # the hostile text was drawn there, made harmless
    for text in (drawn, terminal_output(app)):
        for raw in FROM_THE_DATA:
            assert raw not in text, (raw, text)


@pytest.fixture
async def server() -> AsyncIterator[ReplyServer]:
    async with ReplyServer(
        [Reply(hostile_page("metrics_t0.txt")), Reply(hostile_page("metrics_t1.txt"))]
    ) as s:
        yield s


def _app(server: ReplyServer, log: Path) -> SpectopApp:
    endpoint = EndpointSettings(name="x", url=server.url, backend="vllm", log_file=log)
    settings = Settings(poll_interval_s=0.25, window_s=1.0, alerts=AlertSettings(sustained_s=0.5),
                        endpoints=[endpoint])  # fmt: skip
    return SpectopApp(settings, theme_folders=[themes_dir()], remember_theme_choice=False)  # type: ignore[arg-type]


@asynccontextmanager
async def hostile_app(server: ReplyServer, tmp_path: Path) -> AsyncIterator[tuple[SpectopApp, Pilot[int]]]:
    """The app once the hostile model name is on the card and the hostile OOM line raised its alert."""
    log = tmp_path / "server.log"  # appears once the app runs: the tailer then reads it from its start
    app = _app(server, log)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        card = app.screen.query_one(EndpointCard)
        await wait_for(pilot, lambda: "evil" in card.data.title())
        log.write_text(OOM_LINE + "\n" + f"(APIServer pid=1) INFO 05-01 14:39:07 [x.py:1] {HOSTILE}\n")
        await wait_for(pilot, lambda: any(alert.kind == "oom" for alert in app.alerts.active("x")))
        await wait_for(pilot, lambda: "CUDA out of memory" in str(card.render()))
        yield app, pilot


async def test_card(server: ReplyServer, tmp_path: Path) -> None:
    async with hostile_app(server, tmp_path) as (app, pilot):
        card = app.screen.query_one(EndpointCard)
        await assert_nothing_injected(pilot, card, "x · vllm · evil")  # the title: the model name
        await assert_nothing_injected(pilot, card, "CUDA out of memory. evil")  # the badge line: the alert


async def test_toast(server: ReplyServer, tmp_path: Path) -> None:
    async with hostile_app(server, tmp_path) as (app, pilot):
        await wait_for(pilot, lambda: bool(app.screen.query(Toast)))
        await assert_nothing_injected(pilot, app.screen.query(Toast).last(), "memory. evil")


async def test_detail_screen_and_log_pane(server: ReplyServer, tmp_path: Path) -> None:
    async with hostile_app(server, tmp_path) as (app, pilot):
        await app.push_screen(DetailScreen(app.context, "x"))
        await wait_for(pilot, lambda: bool(app.screen.query(LogPane) and app.screen.query("HeaderTitle")))
        await assert_nothing_injected(pilot, app.screen.query_one(Header), "x · vllm · evil")
        log = app.screen.query_one(LogPane)
        await assert_nothing_injected(pilot, log, "CUDA out of memory. evil")
        await assert_nothing_injected(pilot, log, "14:39:07 evil")


async def test_alerts_screen(server: ReplyServer, tmp_path: Path) -> None:
    async with hostile_app(server, tmp_path) as (app, pilot):
        await app.push_screen(AlertsScreen(app.board.alerts))
        await wait_for(pilot, lambda: bool(app.screen.query(DataTable)))
        await assert_nothing_injected(pilot, app.screen.query_one(DataTable), "CUDA out of memory. evil")
