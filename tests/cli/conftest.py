"""Shared helpers of the command-line tests: spectop run as a user runs it, and a config to change."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tui.paths import sample_configs_dir

REPO = Path(__file__).resolve().parents[2]


def spectop(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m tui ARGS` in a subprocess, from the repository, whatever the test's directory."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=60
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A copy of the sample vLLM config.toml."""
    target = tmp_path / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    return target
