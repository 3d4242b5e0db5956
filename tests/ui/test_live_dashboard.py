# ruff: noqa: E501  (real log lines)
"""The dashboard against real simulators (in-process SimServer, short poll interval)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_advice_dashboard import ScriptedSourceBase
from textual.widgets import Static
from ui_waiting import Replayed, polling_fast, press_then_pause, spectop, wait_for, wait_until_tailed

import tui.screens.dashboard as dashboard
from tests.telemetry.metrics_test_server import closed_port
from tui.paths import sample_configs_dir
from tui.screens.detail import DetailScreen
from tui.settings import EndpointSettings, parse_settings
from tui.sim.server import SimServer
from tui.sources.base import WallClock
from tui.sources.updates import ReadingArrived, Update
from tui.telemetry.figures import Figures
from tui.telemetry.logs import llamacpp
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import read_records
from tui.ui.app import SpectopApp
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.log_pane import LogPane


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[SimServer]:
    config = tmp_path / "config.toml"
    text = (sample_configs_dir() / "config.toml").read_text(encoding="utf-8")
    text = text.replace("acceptance_threshold = 0.6", "acceptance_threshold = 0.7")
    config.write_text(text, encoding="utf-8")
    log = tmp_path / "sim.log"
    async with SimServer(
        flavor="vllm", config_path=config, log_path=log, log_interval_s=0.5, background_load_rps=20.0
    ) as server:
        yield server


def _app(sim: SimServer, **kwargs: object) -> SpectopApp:
    files = {"log_file": sim.log_path, "config_file": sim.config_path}
    return polling_fast(EndpointSettings(name="sim", url=sim.base_url, backend="vllm", **files), **kwargs)


def _card(app: SpectopApp) -> EndpointCard:
    return app.screen.query_one(EndpointCard)


async def test_cards_appear_alert_on_low_acceptance_go_down_on_a_stop_or_garbage_and_the_detail_tails_the_log(
    sim: SimServer,
) -> None:
    app = _app(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        assert _card(app).endpoint == "sim"
        await wait_for(pilot, lambda: _card(app).data.figures.generation_tokens_per_s is not None)
        first = len(app.series.endpoint("sim"))
        await wait_for(pilot, lambda: len(app.series.endpoint("sim")) >= first + 3)
        data = _card(app).data
        assert data.status == "up" and data.reading is not None and data.reading.backend == "vllm"
        assert "tok/s" in str(_card(app).render())
        assert app.alerts.threshold("sim") == 0.7  # from the endpoint's config file, not the settings
        sim.control(acceptance=[0.05, 0.05])  # an alert on low acceptance, cleared on recovery
        await wait_for(pilot, lambda: any(a.kind == "acceptance_critical" for a in app.alerts.active("sim")))
        await wait_for(pilot, lambda: "CRIT" in str(_card(app).render()))
        assert _card(app).has_class("alert-critical")
        sim.control(acceptance=[0.95, 0.9])
        await wait_for(pilot, lambda: not app.alerts.active("sim"))
        cleared = [alert for alert in app.alerts.cleared if alert.worst == "critical"]
        assert cleared and cleared[0].cleared_at is not None and cleared[0].cleared_at > cleared[0].started_at
        await sim.stop()
        await wait_for(pilot, lambda: _card(app).data.status == "down")
        assert "down" in str(_card(app).data.status_content())
        assert any(alert.kind == "down" for alert in app.alerts.active("sim"))
        await sim.start()
        await wait_for(pilot, lambda: _card(app).data.status == "up", timeout_s=60)
        assert not any(alert.kind == "down" for alert in app.alerts.active("sim"))
        sim.control(garbage_metrics=True)  # a garbage metrics page is shown, not fatal
        await wait_for(pilot, lambda: _card(app).data.status == "down")
        reading = app.readings["sim"]
        assert reading.error  # the scrape's own explanation, shown on the card
        await wait_for(pilot, lambda: reading.error[:20] in str(_card(app).render()))
        sim.control(garbage_metrics=False)
        await wait_for(pilot, lambda: _card(app).data.status == "up", timeout_s=60)
        await pilot.press("enter")  # the detail screen tails the log
        assert isinstance(app.screen, DetailScreen)
        log = app.screen.query_one(LogPane)
        before = len(log.lines)
        await wait_for(pilot, lambda: len(log.lines) > before + 2)
        await wait_for(pilot, lambda: any("SpecDecoding" in line.text for line in log.lines))


async def test_record_then_replay_gives_the_same_figures(
    sim: SimServer, tmp_path: Path, replayed: Replayed
) -> None:
    path = tmp_path / "session.jsonl"
    app = _app(sim, record_path=path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.series.endpoint("sim")) >= 5)
        seen_live = app.readings["sim"].figures
    recorded = [record async for record in read_records(path) if isinstance(record, EndpointReading)]
    assert len(recorded) >= 5
    assert any(record.figures == seen_live for record in recorded)
    async with replayed(replay_path=path) as (_, again):
        assert again.readings["sim"].figures == recorded[-1].figures
        assert again.series.endpoint("sim").values("generation_tokens_per_s") == [
            record.figures.generation_tokens_per_s if record.up else None for record in recorded
        ]


async def test_threshold_follows_the_config_file_after_another_screen_and_t_opens_the_tune_screen(
    config_toml: Path,
) -> None:
    from tui.screens.tune import TuneScreen

    endpoint = EndpointSettings(
        name="e", url="http://127.0.0.1:9", config_file=config_toml, restart_command=["true"]
    )
    app = spectop(endpoint, EndpointSettings(name="bare", url="http://127.0.0.1:9"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.readings.get("e") is not None)
        assert app.alerts.threshold("e") == 0.6
        text = config_toml.read_text(encoding="utf-8")
        config_toml.write_text(
            text.replace("acceptance_threshold = 0.6", "acceptance_threshold = 0.45"), "utf-8"
        )
        await pilot.press("question_mark")  # any other screen, e.g. the editor, then back
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.alerts.threshold("e") == 0.45)
        assert app.readings["e"].up is False
        await press_then_pause(pilot, "T")  # the focused endpoint's tune screen
        assert isinstance(app.screen, TuneScreen) and app.screen.endpoint.name == "e"
        await press_then_pause(pilot, "escape")
        assert not isinstance(app.screen, TuneScreen)
        await press_then_pause(pilot, "down", "T")
        assert not isinstance(app.screen, TuneScreen)  # no config file nor restart command: said, not opened


# A dying vLLM server: stats, then a traceback whose exception names no specific failure (so no line
# of it raises an alert by itself); it is the last thing the log says.
DYING_LOG = [
    "(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine 000: Avg prompt throughput: 120.5 "
    "tokens/s, Avg generation throughput: 277.9 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 0.7%, Prefix cache hit rate: 34.6%",
    "(EngineCore_DP0 pid=2) ERROR 08-20 14:05:01 [core.py:710] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=2) ERROR 08-20 14:05:01 [core.py:710]   File "/opt/vllm/v1/engine/core.py", '
    "line 701, in run_engine_core",
    "(EngineCore_DP0 pid=2) ERROR 08-20 14:05:01 [core.py:710]     engine_core.run_busy_loop()",
    "(EngineCore_DP0 pid=2) ERROR 08-20 14:05:01 [core.py:710] ValueError: token id 151936 out of range",
]


async def test_a_traceback_that_ends_the_log_raises_its_alert(tmp_path: Path) -> None:
    """The parser is flushed once the real tailer finds the log quiet."""
    log = tmp_path / "server.log"
    log.write_text("(APIServer pid=1) INFO 08-20 14:04:00 [api_server.py:1] starting\n", encoding="utf-8")
    endpoint = EndpointSettings(name="e", url="http://127.0.0.1:9", backend="vllm", log_file=log)
    app = spectop(endpoint)
    long_line = "(APIServer pid=1) INFO 08-20 14:04:16 [x.py:1] " + "x" * 5000  # the tailer allows 16 KB
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until_tailed(pilot, log, lambda: len(app.log_entries("e")))  # what follows is new
        with log.open("a", encoding="utf-8") as handle:
            handle.write("\n".join([long_line, *DYING_LOG]) + "\n")
        await wait_for(pilot, lambda: any(alert.kind == "log_error" for alert in app.alerts.active("e")))
        (alert,) = [alert for alert in app.alerts.active("e") if alert.kind == "log_error"]
        assert alert.severity == "warning"
        assert any(len(entry.line) == len(long_line) for entry in app.log_entries("e"))


async def test_the_dashboard_says_http_was_added_to_a_url_without_scheme(tmp_path: Path) -> None:
    path = tmp_path / "spectop.toml"
    settings = parse_settings('poll_interval_s = 60\n[[endpoints]]\nname = "a"\nurl = "127.0.0.1:9"\n', path)
    assert settings.notes  # nothing listens on port 9: the card is down, the note is what is read here
    app = SpectopApp(settings, remember_theme_choice=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(
            pilot, lambda: any("using http://127.0.0.1:9" in n.message for n in app._notifications)
        )


BROKEN = "0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = 0.50000 (   5 accepted /    10 generated)"


async def test_the_board_counts_the_log_lines_the_parser_could_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(line: str, start: int) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(llamacpp, "parse_acceptance", broken)
    log = tmp_path / "server.log"
    log.write_text("")
    endpoint = EndpointSettings(name="x", url=f"http://127.0.0.1:{closed_port()}", log_file=log)
    app = spectop(endpoint, poll_interval_s=0.25)
    async with app.run_test(size=(80, 24)) as pilot:
        before = await wait_until_tailed(pilot, log, lambda: len(app.board.log_entries("x")))
        with log.open("a") as file:
            file.write(f"{BROKEN}\nan ordinary line\n{BROKEN}\n")
        await wait_for(pilot, lambda: app.board.log_failed_lines.get("x") == 2)
        await wait_for(pilot, lambda: len(app.board.log_entries("x")) >= before + 3)  # shown, as plain lines


URL = "http://127.0.0.1:8000"


class TwoReadings(ScriptedSourceBase):
    """A first reading when `first` is set (the dashboard is up), the second when `go` is (no HTTP)."""

    def __init__(self) -> None:
        self.first = asyncio.Event()
        self.go = asyncio.Event()
        self.now = 100.0
        self.clock = WallClock(lambda: self.now)
        self.sent = 0

    async def updates(self) -> AsyncIterator[Update]:
        await self.first.wait()
        for running in (3.0, 7.0):
            if self.sent:
                await self.go.wait()
                self.now += 2.0
            figures = Figures(running=running, acceptance_rate=0.6)
            yield ReadingArrived(
                EndpointReading(name="a", url=URL, time=self.now, up=True, model="m", figures=figures)
            )
            self.sent += 1
        await asyncio.Event().wait()


async def test_the_first_reading_skips_the_batching_and_the_next_one_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dashboard, "BATCH_DELAY_S", 3600.0)
    source = TwoReadings()
    app = spectop(EndpointSettings(name="a", url=URL), source=source, clock=source.clock.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query(EndpointCard)))
        card = app.screen.query(EndpointCard).first()
        await pilot.pause()
        source.first.set()
        await wait_for(pilot, lambda: card.data.reading is not None)
        assert card.data.figures.running == 3.0
        source.go.set()
        await wait_for(pilot, lambda: source.sent == 2 and app.readings["a"].figures.running == 7.0)
        await pilot.pause()
        assert card.data.figures.running == 3.0  # batched: drawn after BATCH_DELAY_S


async def test_the_empty_dashboard_mentions_the_demo_at_80_columns() -> None:
    app = spectop(theme_folders=[])
    async with app.run_test(size=(80, 24)) as pilot:
        empty = app.screen.query_one("#empty", Static)
        await wait_for(pilot, lambda: empty.display and empty.region.height > 0)
        strips = app.screen._compositor.render_strips()[empty.region.y : empty.region.bottom]
        text = " ".join(strip.text.strip() for strip in strips)
        assert "--endpoint URL" in text and "`spectop demo`" in text, text
