"""The local GPUs through NVML (`pynvml`, optional), every call in a worker thread (NVML blocks)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from tui.gpu.models import GpuProcess, GpuReading, GpuSample, GpuUnavailable

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'spectop[gpu]'"
NVML_TEMPERATURE_GPU = 0  # nvmlTemperatureSensors_t
NVML_CLOCK_SM = 1  # nvmlClockType_t

T = TypeVar("T")


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return value.strip() or None if isinstance(value, str) else None


class NvmlSource:
    """`await NvmlSource().read()` → every local GPU, or why there are none. `close()` shuts NVML down."""

    def __init__(self, module_name: str = "pynvml") -> None:
        self.module_name = module_name
        self._nvml: ModuleType | None = None
        self._load_error: str | None = None  # the bindings are not retried on every poll
        self._initialized = False
        self._lock = threading.Lock()

    async def read(self) -> GpuReading | GpuUnavailable:
        return await asyncio.to_thread(self.read_blocking)

    def read_blocking(self) -> GpuReading | GpuUnavailable:
        with self._lock:
            try:
                return self._read()
            except Exception as error:  # a reading that fails is data, not a crash
                log.exception("reading NVML failed")
                return GpuUnavailable("nvml", f"NVML: {_error_text(error)}")

    def close(self) -> None:
        with self._lock:
            if self._initialized and self._nvml is not None:
                with contextlib.suppress(Exception):  # shutting down what is gone is fine
                    self._nvml.nvmlShutdown()
            self._initialized = False

    def _load(self) -> ModuleType | str:
        if self._nvml is None and self._load_error is None:
            try:
                self._nvml = importlib.import_module(self.module_name)
            except ImportError:
                self._load_error = f"NVML bindings not installed ({INSTALL_HINT})"
            except Exception as error:  # a broken install
                log.exception("importing %s failed", self.module_name)
                self._load_error = f"NVML bindings cannot be imported: {_error_text(error)}"
        return self._nvml if self._nvml is not None else self._load_error or "NVML bindings not loaded"

    def _read(self) -> GpuReading | GpuUnavailable:
        nvml = self._load()
        if isinstance(nvml, str):
            return GpuUnavailable("nvml", nvml)
        if not self._initialized:
            try:
                nvml.nvmlInit()
            except Exception as error:  # NVMLError (no driver, no permission): said on the panel, every poll
                return GpuUnavailable("nvml", f"NVML cannot start: {_error_text(error)}")
            self._initialized = True
        count = int(nvml.nvmlDeviceGetCount())
        if count <= 0:
            return GpuUnavailable("nvml", "NVML sees no NVIDIA GPU")
        gpus = tuple(self._device(nvml, index) for index in range(count))
        return GpuReading("nvml", time.time(), time.monotonic(), gpus)

    def _device(self, nvml: Any, index: int) -> GpuSample:
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:  # NVMLError_GpuIsLost and kin (or a broken binding): listed, every figure unknown
            return GpuSample(index=index, uuid=None)

        def get(call: Callable[[], T]) -> T | None:
            try:
                return call()
            except Exception:  # NVMLError_NotSupported / NoPermission / GpuIsLost: unknown, not 0
                return None

        memory = get(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        utilization = get(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        power_mw = get(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
        energy_mj = get(lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
        reasons_call = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        reasons = get(lambda: reasons_call(handle)) if reasons_call is not None else None
        running = getattr(nvml, "nvmlDeviceGetComputeRunningProcesses", None)
        listed = get(lambda: list(running(handle))) if running is not None else None
        return GpuSample(
            index=index,
            uuid=_text(get(lambda: nvml.nvmlDeviceGetUUID(handle))),
            name=_text(get(lambda: nvml.nvmlDeviceGetName(handle))),
            memory_used_bytes=_int(getattr(memory, "used", None)),
            memory_total_bytes=_int(getattr(memory, "total", None)) or None,
            utilization_pct=_number(getattr(utilization, "gpu", None)),
            power_w=None if _number(power_mw) is None else float(power_mw) / 1000.0,  # type: ignore[arg-type]
            energy_j=None if _number(energy_mj) is None else float(energy_mj) / 1000.0,  # type: ignore[arg-type]
            temperature_c=_number(get(lambda: nvml.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU))),
            sm_clock_mhz=_number(get(lambda: nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM))),
            throttle_reasons=_int(reasons),
            dram_active=None,  # NVML has no DRAM-active ratio (utilization.memory is another figure)
            processes=None if listed is None else tuple(_process(entry) for entry in listed[:MAX_PROCESSES]),
        )


MAX_PROCESSES = 32  # per GPU: the rows show a few, the rest is a count


def _process(entry: object) -> GpuProcess:
    """One of NVML's running processes; its name from /proc (None when it is gone or not ours to read)."""
    pid = _int(getattr(entry, "pid", None)) or 0
    name = None
    with contextlib.suppress(OSError):
        name = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()[:64] or None
    return GpuProcess(pid, name, _int(getattr(entry, "usedGpuMemory", None)))


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return None
    return float(value)


def _int(value: object) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _error_text(error: BaseException) -> str:
    return str(error).strip() or type(error).__name__
