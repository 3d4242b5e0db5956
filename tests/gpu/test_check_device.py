"""The device check script: on a machine with an NVIDIA GPU it prints the panel; elsewhere it is skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tui.sim.gpu_page import GPU_METRICS_PATH

SCRIPT = Path(__file__).parent / "check_device.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--gap", "0.5", *args], capture_output=True, text=True, timeout=60
    )


def test_check_device_on_this_machine() -> None:
    result = _run()
    assert result.returncode == 0, result.stderr
    if result.stdout.startswith("no GPU: "):
        pytest.skip(result.stdout.strip())  # e.g. "no GPU: NVML bindings not installed (...)"
    assert result.stdout.startswith("GPUs from NVML:") and "GPU 0" in result.stdout


def test_check_device_prints_the_panel_of_an_exporter_page(gpu_sim: str) -> None:
    result = _run("--dcgm", gpu_sim + GPU_METRICS_PATH)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("GPUs from http://") and lines[1].startswith(
        "GPU 0 NVIDIA H100 80GB HBM3 · mem "
    )
    assert lines[2].startswith("GPU 0: ") and "from the counter" in lines[2]
