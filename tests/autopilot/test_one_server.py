"""One server: the change is compared with the window before it at matched load; `spectop autopilot`
acts, says each decision in a line, and on SIGINT leaves the config at its last verified state."""

from __future__ import annotations

import asyncio
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.autopilot.conftest import ROOT, kept_models
from tui.autopilot import audit
from tui.autopilot.loop import Autopilot
from tui.autopilot.observe import ServerEyes
from tui.autopilot.policy import Limits
from tui.autopilot.targets import Target
from tui.sim.supervisor import DemoSims

LIMITS = Limits(sustained_s=2, quiet_s=3, interval_s=1, test_limit_s=60)


def test_the_cli_keeps_a_better_k_and_leaves_it_on_sigint(one_sim: DemoSims, tmp_path: Path) -> None:
    sim, trail = one_sim.sims[0], tmp_path / "autopilot.jsonl"
    command = [
        sys.executable, "-m", "tui", "autopilot", str(sim.config), "--endpoint", sim.url,
        "--restart-command", shlex.join(one_sim.restart_command("one")), "--auto", "--sim-step-cost",
        "--interval", "1", "--sustained", "2", "--quiet", "3", "--test-limit", "60", "--audit", str(trail),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:  # waits on the autopilot's own lines: a verdict, or the end
        lines.append(line.rstrip())
        if " kept " in line or " rolled_back " in line:
            process.send_signal(signal.SIGINT)
            break
    lines += process.stdout.read().splitlines()
    assert process.wait() == 0
    print("\n".join(lines))
    assert lines[0].startswith("spectop autopilot: acting (--auto)")
    assert any(" k=4->2 kept · better " in line for line in lines)
    assert any("config left at its last verified state (k=2)" in line for line in lines)
    assert "num_speculative_tokens = 2" in sim.config.read_text()
    history = subprocess.run(
        [sys.executable, "-m", "tui", "autopilot", "--history", "--audit", str(trail)],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout  # fmt: skip
    print(history)
    assert "1 change(s) kept" in history and "k=4 -> k=2: +" in history and "sure at " in history


async def test_a_load_that_moved_is_said_and_waited_out(one_sim: DemoSims, tmp_path: Path) -> None:
    sim, trail = one_sim.sims[0], tmp_path / "autopilot.jsonl"
    found, lines, shown = sim.config.read_bytes(), [], []
    target = Target(sim.url, sim.config, one_sim.restart_command("one"), sim.url)
    async with httpx.AsyncClient() as client:
        eyes = ServerEyes(sim.url, sim.url + "/metrics", client)
        pilot = Autopilot(
            {sim.url: target}, eyes, kept_models(sim), LIMITS,
            auto=True, audit_path=trail, client=client, say=lines.append,
            on_state=lambda states: shown.extend(state.line() for state in states.values()),
        )  # fmt: skip
        run = asyncio.create_task(pilot.run())
        while pilot.trial is None:
            await asyncio.sleep(0.2)
        httpx.post(sim.url + "/sim/control", json={"background_load_rps": 12.0}, timeout=5)
        while not any("load moved too much to compare" in line for line in lines):
            await asyncio.sleep(0.2)
        assert pilot.trial is not None  # no verdict while the load is not the load before
        run.cancel()  # as SIGINT: the change is not verified, so the file goes back as found
        await asyncio.gather(run, return_exceptions=True)
    print("\n".join(lines))
    assert sim.config.read_bytes() == found
    outcomes = [(r.outcome, r.reason) for r in audit.read(trail)[0]]
    assert ("rolled_back", "interrupted before the test was clear") in outcomes
    assert outcomes[-1] == ("left", "config left as found (k=4)")
    # what a dashboard card shows, interval by interval
    assert any(line.startswith("autopilot: watching · k=4 now · k=2 would be") for line in shown)
    assert "autopilot: canary k=2: restarted, quiet period" in shown
    assert any("(not yet significant); the load moved too much to compare" in line for line in shown)
