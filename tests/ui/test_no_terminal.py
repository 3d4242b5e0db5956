"""TUI commands without a terminal exit 2 at once (Textual spun at 100% CPU on a closed stdin forever)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from recording_factory import write_recording

REPO = Path(__file__).resolve().parents[2]


def run_without_terminal(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,  # stdout to a pipe, like `spectop >out`
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("command", ["dashboard", "replay", "edit", "demo"])
def test_tui_commands_without_a_terminal_exit_2(command: str, tmp_path: Path, config_toml: Path) -> None:
    config = config_toml
    argv = {
        "dashboard": ["--endpoint", "http://127.0.0.1:9"],
        "replay": ["replay", str(write_recording(tmp_path / "recording.jsonl"))],
        "edit": ["edit", str(config)],
        "demo": ["demo"],
    }[command]
    result = run_without_terminal(*argv)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "needs a terminal; use `spectop snapshot` / `spectop logs`" in result.stderr
    assert result.stderr.startswith("spectop: ")
    assert "starting two simulated" not in result.stdout  # the demo starts no sims first
