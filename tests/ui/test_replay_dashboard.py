"""The dashboard driven by a deterministic recording: cards, figures, alerts, keys, screens."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from recording_factory import STEPS
from ui_waiting import Replayed, card_texts, press_then_pause, spectop, wait_for

from tui.screens.dashboard import DashboardScreen
from tui.screens.detail import DetailScreen
from tui.sources import LiveSource, ReplaySource
from tui.state import state_path
from tui.telemetry.events import ErrorEvent
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import check_recording, read_records
from tui.ui.app import SpectopApp
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.log_pane import LogPane


async def test_replay_shows_cards_their_last_figures_and_alerts_keys_move_and_s_saves_a_screenshot(
    replayed: Replayed, recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_recording(recording)  # what `spectop replay` checks before it opens the dashboard: it passes
    monkeypatch.chdir(tmp_path)
    async with replayed() as (pilot, app):
        assert isinstance(app.focused, EndpointCard) and app.focused.endpoint == "mtp-on"
        await pilot.press("down")
        assert app.focused.endpoint == "mtp-off"
        await pilot.press("down", "down")
        assert app.focused.endpoint == "llama-draft"
        await pilot.press("up", "enter")
        assert isinstance(app.screen, DetailScreen) and app.screen.endpoint == "mtp-off"
        await pilot.press("escape", "up", "enter")
        detail = app.screen
        assert isinstance(detail, DetailScreen) and detail.endpoint == "mtp-on"
        log = detail.query_one(LogPane)
        await wait_for(pilot, lambda: len(log.lines) > 0)
        assert any("SpecDecoding" in line.text for line in log.lines)
        await pilot.press("3")
        assert detail.window_s == 1800.0
        await pilot.press("f")
        assert log.follow is False
        await press_then_pause(pilot, "slash", *"throughput")
        assert log.lines and all("throughput" in line.text for line in log.lines)
        await press_then_pause(pilot, "escape")  # clears the filter
        assert any("SpecDecoding" in line.text for line in log.lines)
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("s")  # a screenshot, into the current folder
        await wait_for(pilot, lambda: any(tmp_path.glob("spectop_screenshot_*.svg")))
        assert "mtp-on" in next(tmp_path.glob("spectop_screenshot_*.svg")).read_text(encoding="utf-8")
        cards = list(app.screen.query(EndpointCard))
        assert [card.endpoint for card in cards] == ["mtp-on", "mtp-off", "llama-draft"]
        readings = read_records(recording)
        last = {record.name: record async for record in readings if isinstance(record, EndpointReading)}
        expected = f"{last['mtp-on'].figures.generation_tokens_per_s:.1f}"
        assert expected in card_texts(app)["mtp-on"]
        mtp_off = card_texts(app)["mtp-off"]
        assert "accept     –" in mtp_off  # no drafting: a dash, never 0
        assert len(app.series.endpoint("mtp-on")) == STEPS
        active = {(alert.endpoint, alert.kind) for alert in app.alerts.active()}
        assert active == {("mtp-on", "acceptance_critical")}  # one alert per condition, the worst
        cleared = {(alert.endpoint, alert.kind) for alert in app.alerts.cleared}
        assert ("llama-draft", "down") in cleared  # went down at step 100, back at 110
        assert ("llama-draft", "oom") in cleared  # the restart cleared the OOM
        assert "CRIT" in card_texts(app)["mtp-on"]
        # Three cards: 3 x 8 roomy rows + header + footer = 26 rows. 80x24 is too short for that,
        # so the cards stay compact (every card visible); 80x30 has room for the roomy layout.
        assert not any(card.roomy for card in cards)
        assert "TTFT p50" not in card_texts(app)["mtp-on"]  # compact: "TTFT p50/p95" on one line
        await pilot.resize_terminal(80, 30)
        await wait_for(pilot, lambda: all(card.roomy for card in app.screen.query(EndpointCard)))
        assert "TTFT p50" in card_texts(app)["mtp-on"]


async def test_pause_speed_and_filter(replay_app: Callable[..., SpectopApp]) -> None:
    app = replay_app(replay_speed=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        source = app.source
        assert isinstance(source, ReplaySource) and source.paused
        assert "PAUSED" in app.sub_title
        await pilot.press("plus", "plus")
        assert source.replay_clock.speed == 4.0
        await pilot.press("minus")
        assert source.replay_clock.speed == 2.0
        await pilot.press("p")
        assert not source.paused
        await wait_for(pilot, lambda: len(list(app.screen.query(EndpointCard))) == 3)
        await pilot.press("slash", *"llama", "enter")
        visible = [card.endpoint for card in app.screen.query(EndpointCard) if card.display]
        assert visible == ["llama-draft"]
        await pilot.press("escape")
        assert all(card.display for card in app.screen.query(EndpointCard))


async def test_theme_cycles_and_is_remembered_but_starting_up_writes_no_state(
    replay_app: Callable[..., SpectopApp], replayed: Replayed
) -> None:
    state = state_path()
    async with replayed(remember_theme_choice=True) as (pilot, app):
        await pilot.pause(0.2)
    assert not state.exists()  # nothing chosen: nothing written, starting or quitting
    app = replay_app(remember_theme_choice=True)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "spectop-dark"
        await pilot.press("t")
        assert app.theme == "spectop-high-contrast"
        await wait_for(pilot, state.is_file)
    again = replay_app(remember_theme_choice=True)
    async with again.run_test(size=(80, 24)):
        assert again.theme == "spectop-high-contrast"


async def test_a_broken_recording_line_is_reported_not_fatal(tmp_path: Path, replayed: Replayed) -> None:
    path = tmp_path / "bad.jsonl"
    good = EndpointReading(name="x", time=1.0, up=True).model_dump_json()
    path.write_text(f"{good}\n{{oops\n{good}\n", encoding="utf-8")
    async with replayed(replay_path=path) as (_, app):
        messages = [notification.message for notification in app._notifications]
        assert any("bad.jsonl:2: not JSON" in message for message in messages)
        assert [card.endpoint for card in app.screen.query(EndpointCard)] == ["x"]


def test_replaying_a_file_that_is_not_a_recording_exits_2_before_any_screen(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[model]\nname = "x"\n', encoding="utf-8")
    command, env = [sys.executable, "-m", "tui", "replay", str(config)], {**os.environ, "TERM": "dumb"}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"spectop replay: {config} is not a spectop recording (line 1: not JSON")
    assert done.stdout == ""  # no screen drawn


async def test_a_live_recording_rotated_at_its_cap_says_so(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    app = spectop(record_path=path, record_max_mb=0.02)  # 20 KB
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.source, LiveSource)
        recorder = app.source.recorder
        assert recorder is not None
        for number in range(300):
            await recorder.write_log_event("a", float(number), ErrorEvent(category="oom", line="x" * 200))
        await recorder.flush()
        await wait_for(pilot, lambda: recorder.rotations > 0)
        messages = [notification.message for notification in app._notifications]
        assert f"recording rotated to {tmp_path / 'live.jsonl.1'}" in messages
    assert path.stat().st_size <= 20 * 1024 and (tmp_path / "live.jsonl.1").stat().st_size <= 20 * 1024
