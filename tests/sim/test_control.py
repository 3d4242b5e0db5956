"""`/sim/control` answers errors in plain words, rejects `{"acceptance": 2}`, is described in
`spectop sim --help`, and what it changed outlives a restart (with `--control-file`, a sim started again
after it died has it too); a sim started with `--parent-pid` stops when that parent is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.sim.conftest import write_vllm_config
from tui.cli import main
from tui.commands.sim import CONTROL_HELP
from tui.sim.faults import CONTROL_KEYS, FAULT_NAMES
from tui.sim.server import SimServer

REPO = Path(__file__).resolve().parents[2]


async def test_control_errors_are_sentences_naming_the_key() -> None:
    async with SimServer() as sim, httpx.AsyncClient(base_url=sim.base_url) as client:
        before = list(sim.behaviour.acceptance) if sim.behaviour else []
        cases = {
            '{"acceptance": 2}': ["acceptance: 2 is not a factor between 0 and 1", "0.5 halves"],
            '{"acceptanc": 0.5}': ["unknown key 'acceptanc'", "did you mean acceptance?"],
            '{"acceptance": [0.5], "warp_drive": true}': ["unknown key 'warp_drive'"],  # nothing applied
            '{"acceptance": "lots"}': ["acceptance: 'lots' is not valid", "a number 0..1 or a list"],
            '{"speed": -1}': ["speed: -1 is out of range (expected a number above 0)"],
            '{"error_rate": 3}': ["error_rate: 3 is out of range (expected a number at most 1)"],
            "[0.5]": ["expected a JSON object"],
        }
        for body, words in cases.items():
            answer = await client.post("/sim/control", content=body.encode())  # as curl -d sends it
            message = answer.json()["error"]["message"]
            assert answer.status_code == 400, body
            assert all(word in message for word in words), (body, message)
            assert "pydantic" not in message and "type=" not in message, message
        assert sim.behaviour is not None and sim.behaviour.acceptance == before  # nothing applied
        fine = await client.post("/sim/control", content=b'{"acceptance": 0.5}')
        assert fine.status_code == 200 and fine.json()["applied"] == {"acceptance": 0.5}
        body = {"acceptance": [0.1, 0.1], "error_rate": 0.0, "background_load_rps": 0.0}
        lists = await client.post("/sim/control", json=body)
        assert lists.status_code == 200 and sim.behaviour.acceptance == [0.1, 0.1]


def test_sim_help_lists_the_flags_and_every_control_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit) as exited:
        main(["sim", "--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert "POST /sim/control" in shown and CONTROL_HELP.splitlines()[0] in shown
    flags = ("--flavor", "--background-load", "--log-interval", "--error-rate", "--lossy", "--api-key-env")
    for word in (*flags, "--parent-pid", *CONTROL_KEYS, *FAULT_NAMES):
        assert word in shown, word


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # exited (a zombie waits for whoever adopted it)


def test_a_sim_stops_when_its_parent_is_killed() -> None:
    # A stand-in for spectop demo: starts a sim with --parent-pid of itself, prints its pid, then waits.
    parent_code = (
        "import os, subprocess, sys, time\n"
        "argv = [sys.executable, '-m', 'tui', 'sim', '--port', '0', '--parent-pid', str(os.getpid())]\n"
        "p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)\n"
        "print(p.pid, p.stdout.readline().strip(), flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ}
    )
    assert parent.stdout is not None
    line = parent.stdout.readline()
    sim_pid = int(line.split()[0])
    assert "listening on" in line
    try:
        os.kill(parent.pid, signal.SIGKILL)  # no cleanup can run
        parent.wait()
        for _ in range(400):  # the watchdog looks every 0.5 s
            if _gone(sim_pid):
                break
            time.sleep(0.05)
        assert _gone(sim_pid), "the sim outlived its parent"
    finally:
        if not _gone(sim_pid):
            os.kill(sim_pid, signal.SIGKILL)


ADVISOR_EXAMPLE = [0.85, 0.05]  # README's: k=1 gets faster than k=2


async def test_a_restart_keeps_the_control_changes(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=2)
    async with SimServer(config_path=config) as sim, httpx.AsyncClient(base_url=sim.base_url) as client:
        sim.restart_down_s = 0.0
        answer = await client.post("/sim/control", json={"acceptance": ADVISOR_EXAMPLE, "speed": 2.0})
        assert answer.status_code == 200
        await client.post("/sim/control", json={"reset_counters": True})
        write_vllm_config(config, k=1)  # the guard's change: one draft token
        await sim.restart()
        assert sim.behaviour is not None and sim.behaviour.k == 1
        assert sim.behaviour.acceptance[:2] == ADVISOR_EXAMPLE and sim.behaviour.speed == 2.0
        await sim.restart()  # a factor is replayed on the fresh config, never applied twice
        assert sim.behaviour.acceptance[:2] == ADVISOR_EXAMPLE


async def test_a_control_file_carries_the_changes_to_a_new_process(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=2)
    kept = tmp_path / "control.json"
    async with SimServer(config_path=config, control_file=kept) as sim:
        default = list(sim.behaviour.acceptance[:2]) if sim.behaviour else []
        sim.control(acceptance=ADVISOR_EXAMPLE)
        sim.control(acceptance=0.5, reset_counters=True)
    kept_bodies = json.loads(kept.read_text(encoding="utf-8"))
    assert kept_bodies == [{"acceptance": ADVISOR_EXAMPLE}, {"acceptance": 0.5}]  # no reset_counters
    async with SimServer(config_path=config, control_file=kept) as again:
        assert again.behaviour is not None
        assert again.behaviour.acceptance[:2] == pytest.approx([0.425, 0.025])
    async with SimServer(config_path=config) as fresh:  # no file: the config's acceptance
        assert fresh.behaviour is not None and fresh.behaviour.acceptance[:2] == default


def test_a_broken_control_file_is_an_error_naming_it(tmp_path: Path) -> None:
    kept = tmp_path / "control.json"
    kept.write_text('[{"acceptanc": 0.5}]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"control\.json: unknown key 'acceptanc'"):
        SimServer(control_file=kept)
