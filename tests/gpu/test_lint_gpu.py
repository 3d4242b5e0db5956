"""`spectop config lint` on the node: the memory fraction against the GPUs as they are now."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.gpu.conftest import SIM_GPU_MEMORY
from tests.sim.conftest import write_vllm_config
from tui.cli import main
from tui.configs.document import ConfigDocument, load_document
from tui.configs.lint import gpu_findings
from tui.gpu.models import GpuSample
from tui.paths import sample_configs_dir
from tui.sim.gpu_page import GPU_METRICS_PATH

GIB = 2**30


def _gpus(*used_gib: float) -> list[GpuSample]:
    return [
        GpuSample(index, f"GPU-{index}", memory_used_bytes=int(used * GIB), memory_total_bytes=80 * GIB)
        for index, used in enumerate(used_gib)
    ]


def _vllm(tmp_path: Path, memory: float, *, spec: bool = True) -> Path:
    return write_vllm_config(tmp_path / "config.toml", gpu_memory_utilization=memory, enabled=spec)


def _doc(path: Path) -> ConfigDocument:
    return load_document(path.read_text(encoding="utf-8"), path=path)


def test_in_use_memory_that_does_not_fit_the_headroom(tmp_path: Path) -> None:
    path = _vllm(tmp_path, 0.9)
    # 0.9 of 80 GiB = 72 GiB claimed; GPU 1 has 12 GiB in use, so only 68 GiB free.
    (finding,) = gpu_findings(_doc(path), _gpus(2, 12))
    assert finding.id == "gpu-headroom-too-small" and finding.severity == "warning"
    assert finding.key == "model.gpu_memory_utilization" and finding.line == 5
    assert finding.message.startswith("gpu_memory_utilization 0.9 leaves 8.0 GiB of GPU 1 (80.0 GiB)")
    assert "12.0 GiB is in use now" in finding.message and "also" not in finding.message
    assert "0.85 at most" in finding.fix  # 68 GiB free of 80, rounded down
    (both,) = gpu_findings(_doc(path), _gpus(12, 9))
    assert "of GPU 0" in both.message and "(also on GPU 1)" in both.message
    assert gpu_findings(_doc(path), _gpus(2, 7)) == []  # 73 GiB free: fits


def test_a_running_server_at_95_percent_with_speculation(tmp_path: Path) -> None:
    (finding,) = gpu_findings(_doc(_vllm(tmp_path, 0.92)), _gpus(77))  # 96% in use
    assert finding.id == "gpu-memory-full-with-spec" and "96%" in finding.message
    assert gpu_findings(_doc(_vllm(tmp_path, 0.92, spec=False)), _gpus(77)) == []
    assert gpu_findings(_doc(_vllm(tmp_path, 0.92)), _gpus(75)) == []  # 94%: the article's line not crossed


@pytest.mark.parametrize(
    ("fraction", "suggested"), [(0.92, "0.85"), (0.85, "0.80"), (0.8, "0.75"), (0.853, "0.80")]
)
def test_the_advice_never_suggests_the_value_already_set(
    tmp_path: Path, fraction: float, suggested: str
) -> None:
    """The fix never says "lower to 0.85" of a value that is 0.85 already."""
    (finding,) = gpu_findings(_doc(_vllm(tmp_path, fraction)), _gpus(77))
    assert finding.fix.startswith(f"lower gpu_memory_utilization to {suggested},"), finding.fix


def test_sglang_without_a_fraction_and_unknown_memory_say_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"model_path": "deepseek-ai/DeepSeek-V3", "speculative_algorithm": "EAGLE"}))
    assert gpu_findings(_doc(path), _gpus(79)) == []  # SGLang picks its own fraction: nothing to compare
    path.write_text(
        json.dumps({"model_path": "m", "mem_fraction_static": 0.88, "speculative_algorithm": "EAGLE"})
    )
    assert [f.id for f in gpu_findings(_doc(path), _gpus(20))] == ["gpu-headroom-too-small"]
    unknown = [GpuSample(0, "GPU-0")]
    assert gpu_findings(_doc(_vllm(tmp_path, 0.9)), unknown) == []


def test_lint_against_the_sims_exporter_page(gpu_sim: str, tmp_path: Path, capsys) -> None:
    url = gpu_sim + GPU_METRICS_PATH
    greedy = _vllm(tmp_path, 0.95)  # the sim holds ~0.86 of its GPU: 0.95 cannot start beside it
    assert main(["config", "lint", "--json", "--gpu-metrics-url", url, str(greedy)]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert [f["id"] for f in findings if f["id"].startswith("gpu-headroom")] == ["gpu-headroom-too-small"]
    same = _vllm(tmp_path, SIM_GPU_MEMORY)  # the config the sim runs: fits (below 95% in use)
    assert main(["config", "lint", "--json", "--gpu-metrics-url", url, str(same)]) == 0
    assert not [f for f in json.loads(capsys.readouterr().out) if f["id"].startswith("gpu-")]


def test_lint_without_gpu_data_says_why_in_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    path = _vllm(tmp_path, 0.85)
    assert main(["config", "lint", str(path)]) == 0
    captured = capsys.readouterr()
    (line,) = [line for line in captured.err.splitlines() if "GPU headroom not checked" in line]
    assert "spectop[gpu]" in line and "gpu-" not in captured.out
    assert main(["config", "lint", "--no-gpu", str(path)]) == 0
    assert "GPU headroom" not in capsys.readouterr().err
    refused = "http://127.0.0.1:9/metrics"
    assert main(["config", "lint", "--gpu-metrics-url", refused, str(path)]) == 0
    assert "GPU headroom not checked: DCGM exporter http://127.0.0.1:9/metrics" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["client_settings.json"])
def test_client_configs_are_not_gpu_checked(name: str, capsys) -> None:
    assert main(["config", "lint", str(sample_configs_dir() / name)]) == 0
    assert "GPU headroom" not in capsys.readouterr().err
