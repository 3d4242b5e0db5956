"""The GPU alert rules and which GPUs an endpoint shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.gpu.alerts import memory_high_with_speculation, throttling_during_burst
from tui.gpu.dcgm import parse_dcgm_page
from tui.gpu.history import GpuHistory
from tui.gpu.mapping import plan_for_endpoint, select_gpus, shared_gpu_keys
from tui.gpu.models import REASON_GPU_IDLE, REASON_HW_THERMAL, REASON_SW_POWER_CAP, GpuSample
from tui.settings import SettingsError, parse_settings

SAMPLE = Path(__file__).parent / "samples" / "dcgm_exporter_3.3_h100x2.prom"
GIB = 2**30


def _gpu(index: int, used_gib: float | None = 40, reasons: int | None = None) -> GpuSample:
    used = None if used_gib is None else int(used_gib * GIB)
    return GpuSample(
        index, f"GPU-{index}", memory_used_bytes=used, memory_total_bytes=80 * GIB, throttle_reasons=reasons
    )


def test_memory_rule_fires_at_95_percent_only_with_speculation_on() -> None:
    gpus = parse_dcgm_page(SAMPLE.read_text())  # GPU 0 at 95.3%, GPU 1 at 93.4%
    condition = memory_high_with_speculation(gpus, speculation_on=True)
    assert condition is not None and condition.kind == "gpu_memory_high" and condition.severity == "warning"
    assert condition.gpus == ("GPU 0",) and "95%" in condition.message and "0.85" in condition.message
    assert memory_high_with_speculation(gpus, speculation_on=False) is None
    assert memory_high_with_speculation(gpus, speculation_on=None) is None  # unknown is not "on"
    assert memory_high_with_speculation([_gpu(0, used_gib=None)], speculation_on=True) is None
    assert memory_high_with_speculation([_gpu(0, used_gib=75.9)], speculation_on=True) is None  # 94.9%


def test_throttling_during_a_burst() -> None:
    history = GpuHistory()
    history.add_sample(0.0, _gpu(0, reasons=REASON_GPU_IDLE))
    history.add_sample(10.0, _gpu(0, reasons=0))
    history.add_sample(20.0, _gpu(0, reasons=REASON_SW_POWER_CAP))
    history.add_sample(30.0, _gpu(0, reasons=0))
    history.add_sample(20.0, _gpu(1, reasons=REASON_HW_THERMAL | REASON_GPU_IDLE))
    condition = throttling_during_burst(history, 15.0, 25.0)
    assert condition is not None and condition.kind == "gpu_throttling"
    assert condition.gpus == ("GPU 0", "GPU 1")
    assert "power cap, thermal (hardware)" in condition.message and "idle" not in condition.message
    assert throttling_during_burst(history, 15.0, 25.0, keys=["GPU-0"]).gpus == ("GPU 0",)  # type: ignore[union-attr]
    assert throttling_during_burst(history, 0.0, 12.0) is None  # idle is not throttling
    unknown = GpuHistory()
    unknown.add_sample(20.0, _gpu(0, reasons=None))  # the exporter does not watch the reasons
    assert throttling_during_burst(unknown, 0.0, 30.0) is None


def test_select_gpus_by_index_uuid_and_text() -> None:
    gpus = [_gpu(0), _gpu(1), _gpu(2)]
    assert select_gpus(gpus, None).gpus == tuple(gpus)
    chosen = select_gpus(gpus, [2, "gpu-0", "1", 7])
    assert [gpu.index for gpu in chosen.gpus] == [2, 0, 1] and chosen.missing == ("7",)


def test_shared_gpus_and_where_figures_come_from() -> None:
    a, b = _gpu(0), _gpu(1)
    assert shared_gpu_keys({"on": [a, b], "off": [b]}) == {"GPU-1"}
    assert shared_gpu_keys({"on": [a], "off": [b]}) == set()
    assert plan_for_endpoint("http://127.0.0.1:8000", "http://127.0.0.1:9400/metrics", None).kind == "dcgm"
    assert plan_for_endpoint("http://localhost:8000", None, None).kind == "nvml"
    remote = plan_for_endpoint("http://10.1.2.3:8000", None, None)
    assert remote.kind == "none" and remote.reason is not None and "gpu_metrics_url" in remote.reason
    assert plan_for_endpoint("http://10.1.2.3:8000", None, [0]).kind == "nvml"


def test_settings_fields() -> None:
    settings = parse_settings(
        '[[endpoints]]\nname = "a"\nurl = "http://127.0.0.1:8000"\n'
        'gpu_metrics_url = "127.0.0.1:9400/metrics"\ngpus = [0, "GPU-abc"]\n'
    )
    endpoint = settings.endpoints[0]
    assert endpoint.gpu_metrics_url == "http://127.0.0.1:9400/metrics" and endpoint.gpus == [0, "GPU-abc"]
    with pytest.raises(SettingsError, match="gpu_metrics_url"):
        parse_settings('[[endpoints]]\nname = "a"\nurl = "http://x"\ngpu_metric_url = "http://y"\n')
