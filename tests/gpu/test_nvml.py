"""NVML through `nvidia-ml-py` (pynvml): absent, failing and present (a fake module, tests only)."""

from __future__ import annotations

import sys
import threading

import pytest

from tests.gpu.fake_pynvml import FakeDevice, FakeNvml
from tui.gpu.models import REASON_HW_THERMAL, REASON_SW_POWER_CAP, GpuReading, GpuUnavailable
from tui.gpu.monitor import read_once
from tui.gpu.nvml import NvmlSource


def _install(monkeypatch: pytest.MonkeyPatch, fake: FakeNvml) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())


async def test_no_bindings_no_driver_and_no_gpu_are_reasons_not_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    result = await NvmlSource().read()
    assert isinstance(result, GpuUnavailable) and "spectop[gpu]" in result.reason
    _install(monkeypatch, FakeNvml(init_error="NVML Shared Library Not Found"))
    result = await NvmlSource().read()
    assert isinstance(result, GpuUnavailable) and "NVML Shared Library Not Found" in result.reason
    _install(monkeypatch, FakeNvml(devices=[]))
    result = await NvmlSource().read()
    assert isinstance(result, GpuUnavailable) and "no NVIDIA GPU" in result.reason


async def test_a_lost_gpu_is_listed_unknown_and_a_failing_count_is_a_reading_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeNvml(devices=[FakeDevice(), FakeDevice()])
    module = fake.module()

    def handle(index: int) -> FakeDevice:
        if index == 1:
            raise RuntimeError("GPU is lost")
        return fake.devices[index]

    module.nvmlDeviceGetHandleByIndex = handle  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", module)
    result = await NvmlSource().read()
    assert isinstance(result, GpuReading)
    lost = result.gpus[1]
    assert lost.index == 1 and lost.memory_used_bytes is None and lost.power_w is None
    module.nvmlDeviceGetCount = lambda: handle(1)  # type: ignore[attr-defined]
    result = await NvmlSource().read()
    assert isinstance(result, GpuUnavailable) and "GPU is lost" in result.reason


async def test_present_gpus_with_nvml_units_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    first = FakeDevice(uuid="GPU-aaaa", used=77 * 2**30, total=80 * 2**30, power_mw=612_345, reasons=0)
    second = FakeDevice(
        uuid="GPU-bbbb", power_mw=None, energy_mj=None, reasons=REASON_SW_POWER_CAP | REASON_HW_THERMAL
    )
    fake = FakeNvml(devices=[first, second])
    _install(monkeypatch, fake)
    source = NvmlSource()
    result = await source.read()
    assert isinstance(result, GpuReading) and result.source == "nvml"
    gpu0, gpu1 = result.gpus
    assert (gpu0.index, gpu0.uuid, gpu0.name) == (0, "GPU-aaaa", first.name)
    assert gpu0.memory_used_bytes == first.used and gpu0.memory_total_bytes == first.total
    # mW -> W, mJ -> J
    assert (gpu0.power_w, gpu0.energy_j) == pytest.approx((first.power_mw / 1000, first.energy_mj / 1000))
    assert gpu0.utilization_pct == first.gpu_util and gpu0.temperature_c == first.temperature
    assert gpu0.sm_clock_mhz == first.sm_clock
    assert gpu0.throttling is False and gpu0.dram_active is None  # NVML has no DRAM-active ratio
    # A figure the board does not support is unknown, not 0.
    assert gpu1.power_w is None and gpu1.energy_j is None
    assert gpu1.throttling is True and gpu1.throttle_reasons == REASON_SW_POWER_CAP | REASON_HW_THERMAL
    assert threading.get_ident() not in fake.threads  # every NVML call ran in a worker thread
    await source.read()
    assert fake.init_calls == 1  # NVML is initialised once
    source.close()
    assert fake.shutdown_calls == 1


async def test_older_bindings_without_the_event_reasons_call(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml(devices=[FakeDevice(reasons=REASON_SW_POWER_CAP)], event_reasons_api=False)
    _install(monkeypatch, fake)
    result = await read_once()
    assert isinstance(result, GpuReading)
    assert result.gpus[0].throttle_reasons == REASON_SW_POWER_CAP
