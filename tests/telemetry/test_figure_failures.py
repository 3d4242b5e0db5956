"""A bug while deriving figures is never silent: counted, said where the figures go, in the debug log."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from metrics_test_server import Reply, ReplyServer, sample_body

from tui.debug_log import ENV_VARIABLE, debug_log_path, start_debug_log, stop_debug_log
from tui.format import FIGURES_FAILED
from tui.settings import EndpointSettings
from tui.telemetry.monitor import EndpointMonitor
from tui.telemetry.window import ScrapeWindow


@pytest.fixture
def debug_log(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "debug.log"
    start_debug_log(path)
    yield path
    stop_debug_log()


async def test_a_failing_figure_rule_is_counted_shown_and_logged(
    debug_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: ScrapeWindow) -> object:
        raise ZeroDivisionError("a figure rule bug")

    monkeypatch.setattr(ScrapeWindow, "figures", broken)
    page = sample_body("vllm", "metrics_t0.txt")
    monitor = EndpointMonitor(EndpointSettings(name="a", url="http://127.0.0.1:1"), window_s=30)
    async with ReplyServer([Reply(page), Reply(page)]) as server, httpx.AsyncClient() as client:
        monitor.endpoint = EndpointSettings(name="a", url=server.url)
        first = await monitor.poll(client)
        second = await monitor.poll(client)
    assert first.up and first.error == FIGURES_FAILED and first.figures_failed == 1
    assert second.figures_failed == 2 and monitor.figure_failures == 2
    logged = debug_log.read_text()
    assert "a: deriving the figures failed (1 times)" in logged
    assert "Traceback" in logged and "ZeroDivisionError: a figure rule bug" in logged


async def test_good_figures_say_nothing_failed() -> None:
    page = sample_body("vllm", "metrics_t0.txt")
    async with ReplyServer([Reply(page)]) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="a", url=server.url), window_s=30)
        reading = await monitor.poll(client)
    assert reading.up and reading.error is None and reading.figures_failed == 0


def test_the_debug_log_is_off_unless_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    assert debug_log_path(None) is None
    monkeypatch.setenv(ENV_VARIABLE, str(tmp_path / "env.log"))
    assert debug_log_path(None) == tmp_path / "env.log"
    assert debug_log_path(tmp_path / "option.log") == tmp_path / "option.log"  # the option wins


def test_the_card_says_the_figures_failed_where_they_go() -> None:
    from tui.telemetry.reading import EndpointReading
    from tui.widgets.card_view import CardData, badge_line

    reading = EndpointReading(name="a", time=99.0, up=True, error=FIGURES_FAILED, figures_failed=1)
    data = CardData(name="a", reading=reading, now=100.0)
    assert data.status == "up"
    assert FIGURES_FAILED in badge_line(data, 80).plain
