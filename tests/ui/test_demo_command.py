"""`spectop demo` start-up and shutdown: real `spectop sim` subprocesses, copies of the samples."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from textual.widgets import Select
from ui_waiting import spectop, wait_for

from tests.sim.conftest import samples, value
from tui.bench.session import EndpointArm
from tui.commands.demo import demo_sims, start_sims
from tui.paths import sample_configs_dir
from tui.settings import EndpointSettings
from tui.sim.supervisor import FOLDER_PREFIX, KEPT_FILE, PID_FILE, DemoError, DemoSims, clean_old_folders


def test_a_sim_that_cannot_start_is_reported_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tui.commands.demo as demo

    broken = tmp_path / "samples"
    broken.mkdir()
    (broken / "config.toml").write_text("[model\nbroken", encoding="utf-8")
    (broken / "config_mtp_off.toml").write_text("", encoding="utf-8")
    monkeypatch.setattr(demo, "sample_configs_dir", lambda: broken)
    folder = tmp_path / "demo"
    folder.mkdir()
    with pytest.raises(DemoError, match="mtp-on exited"):
        start_sims(folder)


def _run_restart_command(command: list[str]) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=repo, env=env)


def _reaped(pid: int) -> bool:
    """Gone from the process table (a zombie still has /proc/PID with state Z)."""
    return not Path(f"/proc/{pid}").exists()


def _check_started(sims: DemoSims) -> None:
    """Two sims on free ports, A = MTP off and B = MTP on, from copies of the samples in the demo's folder."""
    folder = sims.folder
    assert [endpoint.name for endpoint in sims.endpoints] == ["mtp-off", "mtp-on"]
    ports = set()
    for endpoint, process in zip(sims.endpoints, sims.processes, strict=True):
        assert endpoint.url.startswith("http://127.0.0.1:")
        ports.add(endpoint.url.rsplit(":", 1)[1])
        assert endpoint.config_file is not None and endpoint.config_file.parent == folder
        assert endpoint.log_file is not None and endpoint.log_file.parent == folder
        assert process.poll() is None
        control = str(folder / "control.sock")
        assert endpoint.restart_command[-4:] == ["tui.commands.demo", "restart", control, endpoint.name]
        page = httpx.get(f"{endpoint.url}/metrics", timeout=5.0).text
        assert "vllm:generation_tokens_total" in page
    assert len(ports) == 2
    assert "enabled = true" in (folder / "config.toml").read_text(encoding="utf-8")


def test_the_demo_starts_its_sims_and_one_that_dies_is_reaped_reported_and_started_again_once_fixed() -> None:
    """The demo's two sims start, then stop with it (no process, no folder, the samples untouched). A sim
    that dies after save & restart with k=16 (CUDA out of memory) is reaped and its death reported once
    with the reason: no zombie is left for `kill -HUP` to "restart"."""
    samples_before = {path.name: path.read_bytes() for path in sample_configs_dir().iterdir()}
    deaths: list[str] = []
    with demo_sims(background_load_rps=0.5) as sims:
        _check_started(sims)
        folder, first_pids = sims.folder, [process.pid for process in sims.processes]
        sims.on_exit = deaths.append
        endpoint = sims.endpoints[1]  # mtp-on
        assert endpoint.config_file is not None and endpoint.restart_command is not None
        config = endpoint.config_file.read_text(encoding="utf-8")
        dead_pid = sims.processes[1].pid
        endpoint.config_file.write_text(
            config.replace("num_speculative_tokens = 2", "num_speculative_tokens = 16"), encoding="utf-8"
        )
        result = _run_restart_command(endpoint.restart_command)  # save & restart with k=16
        assert result.returncode != 0, result.stdout
        assert "CUDA out of memory" in result.stdout  # the reason, from the sim's log
        for _ in range(200):  # the watcher polls every 0.2 s
            if deaths and _reaped(dead_pid):
                break
            time.sleep(0.05)
        assert _reaped(dead_pid)
        assert len(deaths) == 1 and deaths[0].startswith("mtp-on: ") and "out of memory" in deaths[0]
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{endpoint.url}/health", timeout=2.0)

        endpoint.config_file.write_text(config, encoding="utf-8")  # fixed: k=2 again
        result = _run_restart_command(endpoint.restart_command)
        assert result.returncode == 0, result.stdout
        assert "started again" in result.stdout
        assert httpx.get(f"{endpoint.url}/health", timeout=5.0).status_code == 200  # same URL
        assert (new_pid := sims.processes[1].pid) != dead_pid
        # A live sim is restarted with SIGHUP, and the command waits until it is back.
        result = _run_restart_command(endpoint.restart_command)
        assert result.returncode == 0 and "restarted on" in result.stdout, result.stdout
        assert sims.processes[1].pid == new_pid
    assert all(_reaped(pid) for pid in (*first_pids, new_pid))
    assert deaths[1:] == []
    assert not folder.exists()
    assert {path.name: path.read_bytes() for path in sample_configs_dir().iterdir()} == samples_before


def _accepted_after_a_request(url: str) -> tuple[float, float]:
    """(drafted, accepted) draft tokens of one completion, from the counters of a fresh (restarted) sim."""
    httpx.post(f"{url}/v1/completions", json={"prompt": "x", "max_tokens": 40}, timeout=30).raise_for_status()
    page = samples(httpx.get(f"{url}/metrics", timeout=5.0).text)
    drafted, accepted = (f"vllm:spec_decode_num_{kind}_tokens_total" for kind in ("draft", "accepted"))
    return value(page, drafted), value(page, accepted)


def test_a_demo_sim_keeps_its_control_changes_across_every_restart() -> None:
    with demo_sims(background_load_rps=0.0) as sims:
        endpoint = sims.endpoints[1]  # mtp-on
        assert endpoint.restart_command is not None
        never = {"acceptance": [0.0]}  # no draft token is ever accepted: plain to see in the counters
        httpx.post(f"{endpoint.url}/sim/control", json=never, timeout=5).raise_for_status()
        result = _run_restart_command(endpoint.restart_command)  # SIGHUP: restarted in place
        assert result.returncode == 0 and "restarted on" in result.stdout, result.stdout
        assert 'changes kept: [{"acceptance": [0.0]}]' in result.stdout
        drafted, accepted = _accepted_after_a_request(endpoint.url)
        assert drafted > 0 and accepted == 0
        sims.processes[1].kill()  # died: the restart command starts a new process
        sims.processes[1].wait()
        result = _run_restart_command(endpoint.restart_command)
        assert result.returncode == 0 and "started again" in result.stdout, result.stdout
        assert 'changes kept: [{"acceptance": [0.0]}]' in result.stdout
        drafted, accepted = _accepted_after_a_request(endpoint.url)
        assert drafted > 0 and accepted == 0


NAMES = ("mtp-off", "mtp-on")


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_folders_of_dead_demos_are_removed(tmp_path: Path) -> None:
    now = time.time()
    folders = {
        name: tmp_path / f"{FOLDER_PREFIX}{name}" for name in ("dead", "alive", "kept", "old", "young")
    }
    for folder in folders.values():
        folder.mkdir()
    (folders["dead"] / PID_FILE).write_text(f"{_dead_pid()}\n")
    (folders["alive"] / PID_FILE).write_text(f"{os.getpid()}\n")
    (folders["kept"] / PID_FILE).write_text(f"{_dead_pid()}\n")
    (folders["kept"] / KEPT_FILE).write_text("")
    os.utime(folders["old"], (now - 3600, now - 3600))  # an older spectop's folder: no pid file
    (tmp_path / "unrelated").mkdir()
    removed = clean_old_folders(tmp_path, now=now)
    assert sorted(removed) == sorted([folders["dead"], folders["old"]])
    assert all(folders[name].exists() for name in ("alive", "kept", "young"))
    assert (tmp_path / "unrelated").exists()


async def test_the_demo_burst_is_mtp_off_against_mtp_on() -> None:
    endpoints = [EndpointSettings(name=name, url=f"http://127.0.0.1:{9 + i}") for i, name in enumerate(NAMES)]
    app = spectop(*endpoints, bench_pair=NAMES)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.screen.query("EndpointCard")) == 2)
        await pilot.press("down", "down")  # mtp-on's card (as after editing it)
        await pilot.press("b")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "BenchScreen")
        a, b = (app.screen.query_one(f"#{side}-select", Select).value for side in "ab")
        assert isinstance(a, EndpointArm) and a.name == "mtp-off"
        assert isinstance(b, EndpointArm) and b.name == "mtp-on"
