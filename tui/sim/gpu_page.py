"""`spectop sim --gpu`: a dcgm-exporter 3.3 page at `/sim/gpu/metrics`, one H100 per tensor-parallel rank,
following the load: memory grows with the drafts, power with batch and k (capped and throttled near the
limit), and the energy counter never resets. Under /sim/ so the access log stays as vLLM's would."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tui.sim.config import SimConfig

GPU_METRICS_PATH = "/sim/gpu/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

MODEL_NAME = "NVIDIA H100 80GB HBM3"
DRIVER_VERSION = "550.90.07"
HOSTNAME = "spectop-sim"
TOTAL_MIB = 81559
RESERVED_MIB = 513
CONTEXT_FRACTION = 0.005  # CUDA context and NCCL buffers outside the server's pool
IDLE_POWER_W = 72.0
POWER_LIMIT_W = 700.0
CAP_FRACTION = 0.97  # above this share of the limit the power is capped (and the clock throttled)
BOOST_CLOCK_MHZ = 1980.0
IDLE_CLOCK_MHZ = 345.0
BUSY_BATCH = 16  # running sequences at which the GPU is fully busy
TEMPERATURE_TAU_S = 20.0
LOAD_TAU_S = 5.0  # utilisation and power follow the load averaged over seconds, as NVML's do
IDLE_BELOW = 0.05  # a smoothed running count below this is an idle GPU
START_ENERGY_MJ = 3_600_000_000.0  # an hour at full power since the "driver" loaded
REASON_IDLE = 0x1
REASON_SW_POWER_CAP = 0x4

Load = Callable[[], tuple[int, int, float]]  # running, waiting, KV cache usage 0..1


@dataclass
class _GpuState:
    energy_mj: float
    temperature_c: float = 34.0
    power_w: float = IDLE_POWER_W
    last_tick: float | None = None


@dataclass(frozen=True)
class GpuFigures:
    used_mib: int
    free_mib: int
    utilization_pct: int
    power_w: float
    sm_clock_mhz: int
    reasons: int
    dram_active: float


class SimGpus:
    """The simulated GPUs of one sim. `configure()` on every (re)start, `tick()` often, `render()` on GET."""

    def __init__(self, config: SimConfig, load: Load, seed: int = 0) -> None:
        self.config = config
        self.load = load
        self.seed = seed
        self.port = 0
        self._rng = random.Random(seed)
        self._gpus: dict[int, _GpuState] = {}
        self._running: float | None = None  # the running count smoothed over LOAD_TAU_S
        self._load_tick: float | None = None

    def configure(self, config: SimConfig, port: int) -> None:
        """The (new) config and port; UUIDs follow the port so two sims never look like the same GPUs."""
        self.config = config
        self.port = port

    def uuid(self, index: int) -> str:
        return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"spectop-sim:{self.port}:{self.seed}:{index}"))

    def figures(self, index: int, running: float, kv_fraction: float) -> GpuFigures:
        """What GPU `index` shows under this load. `running` is averaged over seconds, as a GPU's utilisation
        and power are: one short request does not swing a reading from idle to busy and back."""
        config = self.config
        busy_share = min(1.0, running)  # the share of time at least one sequence ran
        batch = min(1.0, running / BUSY_BATCH)
        activity = max(min(1.0, kv_fraction), min(1.0, running / max(1, config.max_num_seqs)))
        usable_mib = TOTAL_MIB - RESERVED_MIB
        draft = config.draft_memory_need * (0.25 + 0.75 * activity) if config.k else 0.0
        used_fraction = config.gpu_memory_utilization + CONTEXT_FRACTION + draft
        used = min(usable_mib - 64, int(TOTAL_MIB * used_fraction) + 7 * index)
        if running < IDLE_BELOW:
            return GpuFigures(used, usable_mib - used, 0, IDLE_POWER_W, int(IDLE_CLOCK_MHZ), REASON_IDLE, 0.0)
        utilization = min(100.0, 100.0 * busy_share * (0.55 + 0.45 * batch))
        intensity = (0.55 + 0.45 * batch) * (1.0 + 0.12 * config.k) * (1.0 - 0.015 * index)
        power = IDLE_POWER_W + (POWER_LIMIT_W - IDLE_POWER_W) * (utilization / 100.0) * intensity
        clock = BOOST_CLOCK_MHZ
        reasons = 0
        cap = POWER_LIMIT_W * CAP_FRACTION
        if power > cap:
            clock = BOOST_CLOCK_MHZ * max(0.75, cap / power)
            power = cap + (POWER_LIMIT_W - cap) * min(1.0, (power - cap) / cap)
            reasons = REASON_SW_POWER_CAP
        dram = min(0.95, (0.15 + 0.6 * batch) * busy_share)
        return GpuFigures(used, usable_mib - used, round(utilization), power, int(clock), reasons, dram)

    def tick(self, now: float | None = None) -> list[GpuFigures]:
        """Advance every GPU to `now` (monotonic seconds): energy and temperature integrate over the gap."""
        now = time.monotonic() if now is None else now
        running_now, _waiting, kv_fraction = self.load()
        running = self._smoothed(float(running_now), now)
        out = []
        for index in range(self.config.tensor_parallel_size):  # one GPU per tensor-parallel rank
            state = self._gpus.get(index)
            if state is None:
                state = self._gpus[index] = _GpuState(START_ENERGY_MJ * (1.0 + 0.01 * index))
            figures = self.figures(index, running, kv_fraction)
            power = figures.power_w * (1.0 + self._rng.uniform(-0.01, 0.01))
            if state.last_tick is not None and now > state.last_tick:
                gap = now - state.last_tick
                state.energy_mj += (state.power_w + power) / 2.0 * gap * 1000.0
                target = 32.0 + 45.0 * power / POWER_LIMIT_W
                state.temperature_c += (target - state.temperature_c) * min(1.0, gap / TEMPERATURE_TAU_S)
            state.power_w = power
            state.last_tick = now
            out.append(figures)
        return out

    def _smoothed(self, running: float, now: float) -> float:
        """The running count averaged over about LOAD_TAU_S (exponentially, by the time between ticks)."""
        if self._running is None or self._load_tick is None or now <= self._load_tick:
            self._running = running if self._running is None else self._running
        else:
            weight = min(1.0, (now - self._load_tick) / LOAD_TAU_S)
            self._running += (running - self._running) * weight
        self._load_tick = now
        return self._running

    def render(self, now: float | None = None) -> str:
        figures = self.tick(now)
        lines: list[str] = []
        for name, kind, help_text, value in _FIELDS:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            for index, gpu in enumerate(figures):
                lines.append(f"{name}{{{self._labels(index)}}} {value(gpu, self._gpus[index])}")
        return "\n".join(lines) + "\n"

    def _labels(self, index: int) -> str:
        return (
            f'gpu="{index}",UUID="{self.uuid(index)}",pci_bus_id="00000000:{0x18 + 0x11 * index:02X}:00.0",'
            f'device="nvidia{index}",modelName="{MODEL_NAME}",Hostname="{HOSTNAME}",'
            f'DCGM_FI_DRIVER_VERSION="{DRIVER_VERSION}"'
        )


_FIELDS: tuple[tuple[str, str, str, Callable[[GpuFigures, _GpuState], object]], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", lambda f, _: f.sm_clock_mhz),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", lambda f, _: 2619),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", lambda _, s: round(s.temperature_c)),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", lambda _, s: f"{s.power_w:.6f}"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
     lambda _, s: int(s.energy_mj)),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", lambda f, _: f.utilization_pct),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", lambda f, _: f.free_mib),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", lambda f, _: f.used_mib),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", lambda f, _: RESERVED_MIB),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask).",
     lambda f, _: f.reasons),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data.",
     lambda f, _: f"{f.dram_active:.6f}"),
)  # fmt: skip
