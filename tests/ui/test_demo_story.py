"""`spectop demo` tells its story: A = MTP off, B = MTP on, an intro line, the hints, the guard."""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from pathlib import Path

import httpx
from textual.command import CommandPalette
from textual.widgets import Static

from tests.ui.ui_waiting import press_into, spectop, wait_for
from tui.commands.demo import (
    DEMO_ENDPOINTS,
    DEMO_INTRO,
    GUARD_TRY,
    GUARD_TRY_THEN,
    copy_demo_config,
    demo_app,
    demo_sims,
    guard_lines,
)
from tui.configs import read_acceptance_threshold
from tui.format import fmt_rate
from tui.paths import sample_configs_dir
from tui.screens.detail import DetailScreen
from tui.screens.help import HelpScreen
from tui.settings import EndpointSettings
from tui.sim.behaviour import Behaviour
from tui.sim.config import load_sim_config
from tui.sim.engine import EngineObserver, SimEngine, StepReport
from tui.sim.faults import FaultSettings
from tui.widgets.figure_table import FigureTable


def test_a_is_mtp_off_and_b_is_mtp_on() -> None:
    (a_name, a_file), (b_name, b_file) = DEMO_ENDPOINTS
    assert (a_name, b_name) == ("mtp-off", "mtp-on")
    a = tomllib.loads((sample_configs_dir() / a_file).read_text(encoding="utf-8"))
    b = tomllib.loads((sample_configs_dir() / b_file).read_text(encoding="utf-8"))
    assert a["speculative"]["enabled"] is False and b["speculative"]["enabled"] is True


class _Usage(EngineObserver):
    def __init__(self) -> None:
        self.usage: list[float] = []

    def step_done(self, report: StepReport) -> None:
        self.usage.append(report.kv_used_tokens / report.kv_capacity_tokens)


async def _peak_usage(config_path: Path, requests: int) -> tuple[float, float]:
    config = load_sim_config(config_path, {"speed": 20.0})
    engine = SimEngine(config, Behaviour.from_config(config), FaultSettings())
    observer = _Usage()
    engine.observers.append(observer)
    engine.start()
    try:
        batch = [
            engine.new_request(endpoint="chat", prompt_text="tell a story " * 40, max_tokens=300, seed=seed)
            for seed in range(requests)
        ]
        for request in batch:
            engine.submit(request)
        for request in batch:
            while not (await request.outbox.get()).finished:
                pass
        await asyncio.sleep(0)
    finally:
        await engine.stop()
    return max(observer.usage), observer.usage[-1]


async def test_the_demo_kv_cache_moves_with_load(tmp_path: Path) -> None:
    demo = tmp_path / "config.toml"
    copy_demo_config(sample_configs_dir() / "config.toml", demo)
    assert tomllib.loads(demo.read_text(encoding="utf-8"))["model"]["name"]  # still valid TOML
    light, _ = await _peak_usage(demo, 2)
    heavy, after = await _peak_usage(demo, 16)
    assert f"{light:.1%}" != "0.0%"  # what the card shows at demo load is not a flat 0.0%
    assert heavy > 3 * light  # more requests, more KV in use
    assert after < heavy


GUARD_URL = "http://127.0.0.1:9/sim/control"
NOWHERE = EndpointSettings(name="x", url="http://127.0.0.1:9")  # nothing listens


async def test_the_intro_shows_until_the_first_key_and_comes_back_from_the_palette_and_the_help() -> None:
    app = spectop(NOWHERE, intro=DEMO_INTRO + guard_lines("http://127.0.0.1:9"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        dashboard = app.screen
        intro = dashboard.query_one("#intro")
        assert intro.display and "A = mtp-off, B = mtp-on" in str(intro.render())
        assert intro.region.width >= 78 and intro.region.height >= 1
        assert GUARD_URL in str(intro.render()) and "? (help)" in str(intro.render())
        await pilot.press("down")  # the first key hides it
        await wait_for(pilot, lambda: not intro.display)
        await press_into(pilot, HelpScreen, "question_mark")
        hints = " ".join(str(app.screen.query_one("#intro", Static).render()).split())
        assert f"curl -d '{GUARD_TRY}' {GUARD_URL}" in hints and "switch speculation off" in hints
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is dashboard)
        assert "Demo hints" in [command.title for command in app.get_system_commands(dashboard)]
        await press_into(pilot, CommandPalette, "ctrl+p")
        await pilot.press(*"demo hints", "enter")
        await wait_for(pilot, lambda: app.screen is dashboard and intro.display)
        assert GUARD_URL in str(intro.render())


async def test_without_an_intro_there_are_no_demo_hints() -> None:
    app = spectop(NOWHERE)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Demo hints" not in [command.title for command in app.get_system_commands(app.screen)]
        await press_into(pilot, HelpScreen, "question_mark")
        assert not app.screen.query("#intro")


def test_the_demos_guard_tries_are_readmes() -> None:
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert f"`curl -d '{GUARD_TRY}' URL/sim/control`" in readme  # README's advisor example
    assert """`curl -d '{"acceptance": 0.5}' URL/sim/control`""" in readme  # and its switch-off one
    assert """'{"acceptance": 0.5}'""" in GUARD_TRY_THEN


def test_sample_configs_speak_of_themselves() -> None:
    for path in sample_configs_dir().iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\bseed\b(?! *=)|article", text, re.IGNORECASE), path.name


async def test_the_demo_guards_mtp_on_at_its_files_threshold_and_says_how_to_lower_its_acceptance() -> None:
    with demo_sims(background_load_rps=0.0) as sims:  # one demo for both stories (its start is slow)
        endpoints = {endpoint.name: endpoint for endpoint in sims.endpoints}
        guarded = endpoints["mtp-on"]
        assert guarded.guard == "ask" and guarded.config_file is not None and guarded.restart_command
        assert endpoints["mtp-off"].guard == "off"
        in_the_file = read_acceptance_threshold(guarded.config_file)
        assert in_the_file == 0.5 and "spectop demo" in guarded.config_file.read_text(encoding="utf-8")
        app = demo_app(sims)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.alerts.threshold_source("mtp-on") == "config.toml")
            assert app.alerts.threshold("mtp-on") == in_the_file  # what the alerts and the guard compare with
            assert app.card_data("mtp-on").threshold == in_the_file  # the card's acceptance colour
            await press_into(pilot, DetailScreen, "down", "enter")  # mtp-on's card, its detail
            table = app.screen.query_one(FigureTable)
            await wait_for(pilot, lambda: "threshold" in table.render().plain)
            shown = " ".join(table.render().plain.split())
            assert f"threshold {fmt_rate(in_the_file)} (config.toml)" in shown
        url = f"{guarded.url}/sim/control"
        assert f"curl -d '{GUARD_TRY}' {url}" in (app.context.intro or "")
        response = httpx.post(url, content=GUARD_TRY, timeout=5)  # what the hint tells the user to do
        assert response.status_code == 200 and response.json()["applied"] == json.loads(GUARD_TRY)
