"""A fake `pynvml` module for tests only: the calls spectop makes, with NVML's units and errors."""

from __future__ import annotations

import threading
import types
from dataclasses import dataclass, field


class NVMLError(Exception):
    """Like pynvml.NVMLError: str() is NVML's error string."""


class NVMLError_NotSupported(NVMLError):
    def __init__(self) -> None:
        super().__init__("Not Supported")


@dataclass
class FakeDevice:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    used: int = 40 * 2**30
    total: int = 80 * 2**30
    gpu_util: int = 50
    power_mw: int | None = 350_000
    energy_mj: int | None = 1_000_000_000
    temperature: int = 55
    sm_clock: int = 1980
    reasons: int = 0
    processes: list[tuple[int, int | None]] | None = None  # (pid, used bytes); None: not supported


@dataclass
class FakeNvml:
    devices: list[FakeDevice] = field(default_factory=list)
    init_error: str | None = None
    event_reasons_api: bool = True  # nvmlDeviceGetCurrentClocksEventReasons (newer) or only ...Throttle...
    threads: set[int] = field(default_factory=set)
    init_calls: int = 0
    shutdown_calls: int = 0

    def module(self) -> types.ModuleType:
        fake = self
        module = types.ModuleType("pynvml")
        module.NVMLError = NVMLError  # type: ignore[attr-defined]

        def init() -> None:
            fake.threads.add(threading.get_ident())
            fake.init_calls += 1
            if fake.init_error is not None:
                raise NVMLError(fake.init_error)

        def count() -> int:
            fake.threads.add(threading.get_ident())
            return len(fake.devices)

        def handle(index: int) -> FakeDevice:
            return fake.devices[index]

        def power(device: FakeDevice) -> int:
            if device.power_mw is None:
                raise NVMLError_NotSupported()
            return device.power_mw

        def energy(device: FakeDevice) -> int:
            if device.energy_mj is None:
                raise NVMLError_NotSupported()
            return device.energy_mj

        def processes(device: FakeDevice) -> list[types.SimpleNamespace]:
            if device.processes is None:
                raise NVMLError_NotSupported()
            return [types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in device.processes]

        def shutdown() -> None:
            fake.shutdown_calls += 1

        functions = {
            "nvmlInit": init,
            "nvmlShutdown": shutdown,
            "nvmlDeviceGetCount": count,
            "nvmlDeviceGetHandleByIndex": handle,
            "nvmlDeviceGetName": lambda d: d.name,
            "nvmlDeviceGetUUID": lambda d: d.uuid.encode(),  # old bindings return bytes
            "nvmlDeviceGetMemoryInfo": lambda d: types.SimpleNamespace(used=d.used, total=d.total, free=0),
            "nvmlDeviceGetUtilizationRates": lambda d: types.SimpleNamespace(gpu=d.gpu_util, memory=10),
            "nvmlDeviceGetPowerUsage": power,
            "nvmlDeviceGetTotalEnergyConsumption": energy,
            "nvmlDeviceGetTemperature": lambda d, sensor: d.temperature if sensor == 0 else 0,
            "nvmlDeviceGetClockInfo": lambda d, clock: d.sm_clock if clock == 1 else 0,
            "nvmlDeviceGetCurrentClocksThrottleReasons": lambda d: d.reasons,
            "nvmlDeviceGetComputeRunningProcesses": processes,
        }
        if self.event_reasons_api:
            functions["nvmlDeviceGetCurrentClocksEventReasons"] = lambda d: d.reasons
        vars(module).update(functions)
        return module
