"""The device check script: on a machine with an NVIDIA GPU it prints the panel; elsewhere it is skipped."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.telemetry.metrics_test_server import Reply, ReplyServer
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
    assert result.stdout.startswith("GPUs from NVML:") and "GPU0" in result.stdout


def test_check_device_prints_the_panel_of_an_exporter_page(gpu_sim: str) -> None:
    result = _run("--dcgm", gpu_sim + GPU_METRICS_PATH)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("GPUs from http://") and lines[1].startswith("GPU0 ")
    assert "NVIDIA H100 80GB HBM3" in lines[1] and " W " in lines[1]
    assert lines[2].startswith("GPU 0: ") and "from the counter" in lines[2]


async def test_check_device_says_when_both_reads_were_the_same_cached_exporter_sample() -> None:
    """dcgm-exporter collects every 30 s: two reads a second apart get the same sample."""
    page = (Path(__file__).parent / "samples" / "dcgm_exporter_3.3_h100x2.prom").read_bytes()
    async with ReplyServer([Reply(page)]) as exporter:
        result = await asyncio.to_thread(_run, "--dcgm", exporter.url + "/metrics")
    assert result.returncode == 0, result.stderr
    energy = [line for line in result.stdout.splitlines() if ": energy" in line]
    assert energy and all("same cached exporter sample" in line for line in energy), result.stdout
    assert "no energy counter" not in result.stdout
