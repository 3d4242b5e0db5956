"""One GPU at one moment, whatever the source; a figure a source does not give is None, never 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GpuSourceKind = Literal["nvml", "dcgm"]

# NVML / DCGM clock event ("throttle") reason bits (nvml.h nvmlClocksEventReason*, the same bits in
# DCGM_FI_DEV_CLOCKS_EVENT_REASONS, formerly DCGM_FI_DEV_CLOCK_THROTTLE_REASONS).
REASON_GPU_IDLE = 0x1
REASON_APPLICATIONS_CLOCKS = 0x2
REASON_SW_POWER_CAP = 0x4
REASON_HW_SLOWDOWN = 0x8
REASON_SYNC_BOOST = 0x10
REASON_SW_THERMAL = 0x20
REASON_HW_THERMAL = 0x40
REASON_HW_POWER_BRAKE = 0x80
REASON_DISPLAY_CLOCKS = 0x100

REASON_NAMES: dict[int, str] = {
    REASON_GPU_IDLE: "idle",
    REASON_APPLICATIONS_CLOCKS: "application clocks",
    REASON_SW_POWER_CAP: "power cap",
    REASON_HW_SLOWDOWN: "hardware slowdown",
    REASON_SYNC_BOOST: "sync boost",
    REASON_SW_THERMAL: "thermal (software)",
    REASON_HW_THERMAL: "thermal (hardware)",
    REASON_HW_POWER_BRAKE: "power brake",
    REASON_DISPLAY_CLOCKS: "display clocks",
}
# Reasons that lower the clocks of a busy GPU below what it would run at: they confound an A/B.
# Idle, application clocks (a deliberate lock), display clocks are not throttling.
THROTTLING_REASONS = (
    REASON_SW_POWER_CAP
    | REASON_HW_SLOWDOWN
    | REASON_SYNC_BOOST
    | REASON_SW_THERMAL
    | REASON_HW_THERMAL
    | REASON_HW_POWER_BRAKE
)


def reason_names(mask: int) -> list[str]:
    """The names of the bits set in a clock event reasons mask, lowest bit first."""
    names = [name for bit, name in REASON_NAMES.items() if mask & bit]
    unknown = mask & ~sum(REASON_NAMES)
    return [*names, f"0x{unknown:x}"] if unknown else names


def _fraction(used: int | None, total: int | None) -> float | None:
    return None if used is None or not total else used / total


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process with a context on a GPU (NVML's compute processes); unknown name or memory: None."""

    pid: int
    name: str | None = None
    used_memory_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class GpuSlice:
    """One MIG GPU instance: its own memory and graphics engine activity (GPU_UTIL reads 0 per instance)."""

    profile: str  # "1g.10gb"
    instance_id: str  # the GPU instance id on its GPU
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    engine_active: float | None = None  # ratio 0..1 of the slice's time its graphics engine is busy

    @property
    def label(self) -> str:
        return f"MIG {self.profile} #{self.instance_id}"

    @property
    def memory_fraction(self) -> float | None:
        return _fraction(self.memory_used_bytes, self.memory_total_bytes)


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU at one moment. Memory in bytes, power in W, energy in J, clock in MHz."""

    index: int | None
    uuid: str | None
    name: str | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    utilization_pct: float | None = None
    power_w: float | None = None
    energy_j: float | None = None  # a counter (since boot / driver load); differences are what count
    temperature_c: float | None = None
    sm_clock_mhz: float | None = None
    throttle_reasons: int | None = None  # clock event reasons bit mask; None when the source lacks it
    dram_active: float | None = None  # ratio 0..1 of cycles the memory interface is busy
    processes: tuple[GpuProcess, ...] | None = None  # None: the source cannot list them (dcgm-exporter)
    slices: tuple[GpuSlice, ...] = ()  # its MIG instances (dcgm-exporter), in instance id order

    @property
    def key(self) -> str:
        return self.uuid or f"gpu{self.index}"

    @property
    def label(self) -> str:
        return f"GPU {self.index}" if self.index is not None else (self.uuid or "GPU ?")

    @property
    def memory_fraction(self) -> float | None:
        return _fraction(self.memory_used_bytes, self.memory_total_bytes)

    @property
    def throttling(self) -> bool | None:
        return None if self.throttle_reasons is None else bool(self.throttle_reasons & THROTTLING_REASONS)


@dataclass(frozen=True, slots=True)
class GpuReading:
    """One successful read of a source: every GPU it reported, at one time."""

    source: GpuSourceKind
    time: float  # time.time() when read
    monotonic: float  # time.monotonic() at the same moment: use this for deltas
    gpus: tuple[GpuSample, ...]


@dataclass(frozen=True, slots=True)
class GpuUnavailable:
    """A source that gave nothing this time, and why (shown as the one line instead of the panel)."""

    source: GpuSourceKind
    reason: str
