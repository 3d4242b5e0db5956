"""Burst energy per arm against `spectop sim --gpu` arms: `spectop bench --a-gpu-metrics-url/--b-…`
gives each arm's energy per output token and tokens per joule, and the verdict names the ratio."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sim.conftest import sim_processes, write_vllm_config
from tui.sim.gpu_page import GPU_METRICS_PATH

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_gpu_sims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """A (no speculation) and B (k = 3, which draws more power: the sim caps it) with --gpu."""
    folder = tmp_path_factory.mktemp("burst_energy")
    off = write_vllm_config(folder / "off.toml", enabled=False, k=0)
    on = write_vllm_config(folder / "on.toml", k=3)
    with sim_processes(["--gpu", "--config", str(off)], ["--gpu", "--config", str(on)]) as urls:
        yield urls


def test_bench_energy_per_token_per_arm_and_verdict(two_gpu_sims: list[str], tmp_path: Path) -> None:
    a_url, b_url = two_gpu_sims
    out = tmp_path / "burst.json"
    command = [
        sys.executable, "-m", "tui", "bench", "--a", a_url, "--b", b_url,
        "--a-gpu-metrics-url", a_url + GPU_METRICS_PATH, "--b-gpu-metrics-url", b_url + GPU_METRICS_PATH,
        "--requests", "16", "--concurrency", "8", "--rounds", "2", "--warmup", "0", "--max-tokens", "128",
        "--prompts", "chat", "--no-history", "--json", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    a, b = summary["a"], summary["b"]
    for arm in (a, b):
        assert arm["energy_j"] is not None and arm["energy_j"] > 0, arm["gpu"]
        assert arm["energy_per_token_j"] is not None
        assert arm["tokens_per_joule"] == pytest.approx(1 / arm["energy_per_token_j"])
    ratio = b["energy_per_token_j"] / a["energy_per_token_j"]
    assert f"uses {ratio:.2f}x the energy per token" in summary["comparison"]["verdict"]
    assert "energy per token" in done.stdout and "tokens per joule" in done.stdout
    # The sim's page has clock event reasons: whether each arm was throttled is known (a power-capped arm's
    # warning: tests/gpu/test_burst_watch.py).
    assert a["throttled"] is not None and b["throttled"] is not None
