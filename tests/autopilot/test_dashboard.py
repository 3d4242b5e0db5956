"""The dashboard's autopilot (`o`): per endpoint as spectop.toml says (`autopilot = "auto"` acts, "propose"
proposes), each card saying what it does; `o` again turns it off, quitting leaves each file as found or at
its last verified state, and says which."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest
from textual.pilot import Pilot

from tests.autopilot.conftest import decaying_sims, kept_models
from tui.autopilot import audit, audit_file
from tui.autopilot.policy import Limits
from tui.settings import EndpointSettings, Settings
from tui.sim.supervisor import DemoSims
from tui.ui.app import SpectopApp
from tui.widgets.card_view import badge_line
from tui.widgets.endpoint_card import EndpointCard

LIMITS = Limits(sustained_s=2, quiet_s=3, interval_s=1, test_limit_s=60)


async def wait_until(pilot: Pilot[int], done: Callable[[], bool]) -> None:
    while not done():
        await pilot.pause(0.1)


def outcomes(name: str) -> list[str]:
    return [r.outcome for r in audit.read(audit_file())[0] if r.instance == name]


@pytest.fixture
def two_sims(tmp_path: Path) -> Iterator[DemoSims]:
    with decaying_sims(tmp_path, "acts", "proposes") as sims:
        yield sims


def app_on(sims: DemoSims, *modes: Literal["propose", "auto"]) -> SpectopApp:
    endpoints = [
        EndpointSettings(
            name=sim.name,
            url=sim.url,
            config_file=sim.config,
            restart_command=sims.restart_command(sim.name),
            autopilot=mode,
        )
        for sim, mode in zip(sims.sims, modes, strict=True)
    ]
    return SpectopApp(
        Settings(poll_interval_s=1, endpoints=endpoints),
        step_costs=kept_models(*sims.sims),
        remember_theme_choice=False,
        autopilot_limits=LIMITS,
    )


def shown(app: SpectopApp, name: str) -> str:
    """The card's badge line as drawn, when it is the autopilot's."""
    card = next(card for card in app.screen.query(EndpointCard) if card.data.name == name)
    line = badge_line(card.data, card.content_size.width).plain.strip()
    return line if card.data.autopilot else ""


async def test_the_cards_show_what_the_autopilot_would_do(one_sim: DemoSims) -> None:
    sim = one_sim.sims[0]
    found = sim.config.read_bytes()
    app = app_on(one_sim, "propose")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.board.advice is not None)
        await pilot.press("o")
        await wait_until(pilot, lambda: "proposed" in outcomes("one"))
        assert shown(app, "one").startswith("autopilot: watching · k=4 now · k=2 would be")
        said = '(dry run: autopilot = "auto" for one in spectop.toml to act)'  # what the dashboard takes
        assert any(said in str(n.message) for n in app._notifications)
        await pilot.press("o")
        await wait_until(pilot, lambda: shown(app, "one") == "")
        await wait_until(pilot, lambda: "left" in outcomes("one"))
    assert sim.config.read_bytes() == found


async def test_an_auto_endpoint_gets_the_better_k_and_keeps_it(two_sims: DemoSims) -> None:
    acts, proposes = two_sims.sims
    found = proposes.config.read_bytes()
    app = app_on(two_sims, "auto", "propose")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.board.advice is not None)
        await pilot.press("o")
        await wait_until(pilot, lambda: "kept" in outcomes("acts") or "rolled_back" in outcomes("acts"))
        assert "kept" in outcomes("acts"), outcomes("acts")
        await wait_until(pilot, lambda: "kept k=2: better" in shown(app, "acts"))
        assert "num_speculative_tokens = 2" in acts.config.read_text()
        assert "proposed" in outcomes("proposes")
        await pilot.press("ctrl+c")
    assert "num_speculative_tokens = 2" in acts.config.read_text()
    assert proposes.config.read_bytes() == found
    print("\n".join(app.recovery_notes))
    assert any("config left at its last verified state (k=2)" in note for note in app.recovery_notes)
    assert any("config left as found (k=4)" in note for note in app.recovery_notes)
    kept = next(r for r in audit.read(audit_file())[0] if r.outcome == "kept")
    assert (kept.from_k, kept.to_k, kept.verdict) == (4, 2, "better")


@pytest.mark.parametrize("leaving", ["ctrl+c", "SIGTERM"])
async def test_quitting_while_a_change_is_tested_puts_it_back_first(two_sims: DemoSims, leaving: str) -> None:
    acts = two_sims.sims[0]
    found = acts.config.read_bytes()
    app = app_on(two_sims, "auto", "propose")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.board.advice is not None)
        await pilot.press("o")
        await wait_until(pilot, lambda: "canary k=2," in shown(app, "acts"))
        if leaving == "SIGTERM":  # as `kill` or a closed SSH session ends it
            os.kill(os.getpid(), signal.SIGTERM)
            await wait_until(pilot, lambda: app.return_code is not None)  # its own way out, not the test's
        else:
            await pilot.press(leaving)  # the other endpoint's autopilot is done at once: this one still waits
    print("\n".join(app.recovery_notes))
    assert app.return_code == (128 + signal.SIGTERM if leaving == "SIGTERM" else 0)
    assert acts.config.read_bytes() == found
    assert any("acts: k=4->2 rolled_back" in note for note in app.recovery_notes)
    assert any("acts: left · config left as found (k=4)" in note for note in app.recovery_notes)
