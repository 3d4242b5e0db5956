"""`spectop tune` refuses what cannot work; a signal ends it promptly, the file restored."""

from __future__ import annotations

import shlex
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.tune.conftest import TuneSim, health, spectop, spectop_process, write_config

HEALTH_TIMEOUT_S = 300.0  # a wait the tests must never sit out


def refused(config: Path, *extra: str) -> tuple[int, str]:
    """`spectop tune` run in this process (it ends before any server is asked): its exit code, stderr."""
    code, _, stderr = spectop("tune", str(config), "--values", "1", *extra)
    return code, stderr


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        stdout, stderr = process.communicate(timeout=120)  # a hang guard: these end at once
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return process.returncode, stdout, stderr


REFUSED = "spectop tune: --restart-command: "


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("no-such-restart-command --now", REFUSED + "no-such-restart-command: no such program on PATH"),
        ("CONFIG", REFUSED + "CONFIG: not executable"),  # the config file itself: not executable
        ("/nonexistent/restart.sh", REFUSED + "/nonexistent/restart.sh: no such file"),
        ("true", "http://127.0.0.1:1/health: connection refused: is the server running?"),
    ],
)
def test_a_restart_command_that_cannot_run_or_a_silent_server_is_refused_before_anything_changes(
    tmp_path: Path, command: str, said: str
) -> None:
    config = write_config(tmp_path / "config.toml")
    before = config.read_bytes()
    command, said = (text.replace("CONFIG", str(config)) for text in (command, said))
    # No server answers there: the restart command is checked first.
    code, stderr = refused(config, "--endpoint", "http://127.0.0.1:1", "--restart-command", command)
    assert code == 1
    assert said in stderr
    assert config.read_bytes() == before


@pytest.mark.parametrize(
    ("text", "extra", "said"),
    [
        ("[model\nname = 'x'\n", (), "config.toml: line 1, column 7: missing ']' to close the table header"),
        (None, ("--key", "model.no_such_key"), "--key model.no_such_key: the file has no such key"),
    ],
)
def test_a_file_that_does_not_parse_or_lacks_the_key_is_refused(
    tmp_path: Path, text: str | None, extra: tuple[str, ...], said: str
) -> None:
    config = write_config(tmp_path / "config.toml")
    if text is not None:
        config.write_text(text, encoding="utf-8")
    code, stderr = refused(config, "--endpoint", "http://127.0.0.1:1", "--restart-command", "true", *extra)
    assert code == 2
    assert said in stderr


def restart_script(tune_sim: TuneSim, when_k3: str) -> tuple[Path, Path]:
    """A restart command doing `when_k3` when the file says k=3, else restarting the sim; runs counted."""
    folder = tune_sim.config.parent
    runs = folder / "runs.txt"
    script = folder / "restart.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"echo run >> {shlex.quote(str(runs))}\n"
        f"if grep -q '^num_speculative_tokens = 3 ' {shlex.quote(str(tune_sim.config))}; then {when_k3}; fi\n"
        f"exec {shlex.join(tune_sim.restart_command)}\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script, runs


def run_count(runs: Path) -> int:
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def sweep_k3(tune_sim: TuneSim, script: Path) -> subprocess.Popen[str]:
    return spectop_process(
        "tune", str(tune_sim.config), "--endpoint", tune_sim.url, "--restart-command", str(script),
        "--values", "3", "--concurrency", "1", "--requests", "2", "--max-tokens", "8",
        "--health-timeout", str(HEALTH_TIMEOUT_S), "--no-history",
    )  # fmt: skip


def wait_until(condition: object, process: subprocess.Popen[str]) -> None:
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)


def test_sigterm_during_the_wait_for_health_ends_the_tune_long_before_the_health_timeout(
    tune_sim: TuneSim,
) -> None:
    assert tune_sim.sim.process is not None
    script, runs = restart_script(tune_sim, f"kill -9 {tune_sim.sim.process.pid}; exit 0")
    original = tune_sim.config.read_bytes()
    process = sweep_k3(tune_sim, script)
    # k=3 written, its restart killed the server: the tune now waits for /health (up to 300 s).
    wait_until(lambda: run_count(runs) == 2 and health(tune_sim.url) is None, process)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code, stdout, stderr = finished(process)
    took = time.monotonic() - signalled
    assert took < HEALTH_TIMEOUT_S / 10, stderr
    assert code == 130, stderr
    assert tune_sim.config.read_bytes() == original
    assert run_count(runs) == 3  # the restart command ran on the restored file
    assert "SIGTERM: stopping" in stderr
    assert "restored byte for byte and the restart command run; spectop did not wait for /health" in stderr
    assert "k=3 failed" not in stdout  # cancelled while it started: not reached, not failed
    wait_until_up = time.monotonic()
    while health(tune_sim.url) != 200:  # the demo starts the killed sim again, on k=2
        assert time.monotonic() - wait_until_up < HEALTH_TIMEOUT_S
        time.sleep(0.1)
    assert 'position="1"' in httpx.get(tune_sim.url + "/metrics", timeout=5).text


def test_a_second_ctrl_c_stops_a_restart_command_that_keeps_you_waiting(tune_sim: TuneSim) -> None:
    script, runs = restart_script(tune_sim, f"exec sleep {HEALTH_TIMEOUT_S:.0f}")
    original = tune_sim.config.read_bytes()
    process = sweep_k3(tune_sim, script)
    wait_until(lambda: run_count(runs) == 2, process)  # k=3's restart command hangs
    process.send_signal(signal.SIGINT)
    assert process.stderr is not None
    while "SIGINT: stopping" not in (process.stderr.readline() or "SIGINT: stopping"):
        pass
    signalled = time.monotonic()
    process.send_signal(signal.SIGINT)
    code, _, stderr = finished(process)
    assert time.monotonic() - signalled < HEALTH_TIMEOUT_S / 10, stderr
    assert code == 130, stderr
    assert "SIGINT again: stopping the restart command under way" in stderr
    assert tune_sim.config.read_bytes() == original
    assert run_count(runs) == 3  # the final restart still ran, on the restored file
    assert "spectop did not wait for /health" in stderr
