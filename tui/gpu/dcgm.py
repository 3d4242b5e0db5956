"""NVIDIA dcgm-exporter pages: parse one into `GpuSample`s, and read one over HTTP.

The page is Prometheus text (parsed by `tui.telemetry.prometheus`). dcgm-exporter writes one sample
per GPU and field with the labels `gpu` (the NVML index), `UUID`, `device` (`nvidia0`), `modelName`,
`Hostname`, and in 3.3+ also `pci_bus_id` and `DCGM_FI_DRIVER_VERSION`. Units (its default-counters.csv):
FB_USED / FB_FREE / FB_RESERVED in MiB, GPU_UTIL in %, POWER_USAGE in W, TOTAL_ENERGY_CONSUMPTION in mJ
since boot (a counter), SM_CLOCK in MHz, GPU_TEMP in °C, PROF_DRAM_ACTIVE a ratio 0..1. Throttle reasons
(CLOCKS_EVENT_REASONS, formerly CLOCK_THROTTLE_REASONS) are not in the default counters: None unless
the exporter is told to watch them.

Per-MIG-instance samples (labels GPU_I_ID / GPU_I_PROFILE) are left out: the figures here are whole GPUs.
DCGM's "blank" sentinels (no data, not supported: 0x7ffffff0.., 0x7ffffffffffffff0.., 2**47 for
doubles) and NaN / ±Inf become None.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httpx

from tui.gpu.models import GpuReading, GpuSample, GpuUnavailable
from tui.telemetry.prometheus import MetricsFormatError, Sample, parse_metrics_text
from tui.telemetry.scraper import scrape_metrics

MIB = 2**20
DEFAULT_TIMEOUT_S = 3.0
DEFAULT_MAX_BYTES = 4 * 2**20  # a 8-GPU page with every DCP field is ~200 KB

FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"
FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
TOTAL_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"
CLOCKS_EVENT_REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
CLOCK_THROTTLE_REASONS = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"  # the name before DCGM 3.2

KNOWN_FIELDS = frozenset(
    {
        FB_USED,
        FB_FREE,
        FB_RESERVED,
        FB_TOTAL,
        GPU_UTIL,
        POWER_USAGE,
        TOTAL_ENERGY,
        SM_CLOCK,
        GPU_TEMP,
        DRAM_ACTIVE,
        CLOCKS_EVENT_REASONS,
        CLOCK_THROTTLE_REASONS,
    }
)

_INT32_BLANK = 0x7FFFFFF0
_FP64_BLANK = 2.0**47  # 140737488355328.0; the int64 blanks (0x7ffffffffffffff0..) are above it too
_MIG_LABELS = ("GPU_I_ID", "GPU_I_PROFILE")


def _clean(name: str, value: float) -> float | None:
    """The value, or None for NaN / Inf / DCGM blank sentinels / negative readings."""
    if not math.isfinite(value) or value < 0 or value >= _FP64_BLANK:
        return None
    if name != TOTAL_ENERGY and _INT32_BLANK <= value < 2**31:
        return None  # an int32 field's "blank"; a real energy counter can be this large
    return value


@dataclass
class _Gpu:
    index: int | None
    uuid: str | None
    labels: dict[str, str]
    values: dict[str, float | None] = field(default_factory=dict)


def _gpu_identity(labels: Mapping[str, str]) -> tuple[int | None, str | None]:
    raw_index = labels.get("gpu", "")
    index = int(raw_index) if raw_index.isdigit() else None
    return index, labels.get("UUID") or None


def gpus_from_samples(samples: Iterable[Sample]) -> list[GpuSample]:
    """Whole-GPU samples from the samples of a dcgm-exporter page, in GPU index order."""
    gpus: dict[tuple[int | None, str | None], _Gpu] = {}
    for sample in samples:
        if sample.name not in KNOWN_FIELDS or any(label in sample.labels for label in _MIG_LABELS):
            continue
        index, uuid = _gpu_identity(sample.labels)
        if index is None and uuid is None:
            continue  # not a per-GPU sample (a custom counter without labels)
        gpu = gpus.get((index, uuid))
        if gpu is None:
            gpu = gpus[(index, uuid)] = _Gpu(index, uuid, dict(sample.labels))
        gpu.values[sample.name] = _clean(sample.name, sample.value)
    result = [_to_sample(gpu) for gpu in gpus.values()]
    result.sort(key=lambda gpu: (gpu.index is None, gpu.index or 0, gpu.uuid or ""))
    return result


def _to_sample(gpu: _Gpu) -> GpuSample:
    values = gpu.values
    used = values.get(FB_USED)
    total = values.get(FB_TOTAL)
    if total is None and used is not None and values.get(FB_FREE) is not None:
        total = used + (values.get(FB_FREE) or 0.0) + (values.get(FB_RESERVED) or 0.0)
    energy_mj = values.get(TOTAL_ENERGY)
    reasons = values.get(CLOCKS_EVENT_REASONS, values.get(CLOCK_THROTTLE_REASONS))
    dram = values.get(DRAM_ACTIVE)
    util = values.get(GPU_UTIL)
    return GpuSample(
        index=gpu.index,
        uuid=gpu.uuid,
        name=gpu.labels.get("modelName") or None,
        memory_used_bytes=None if used is None else int(used * MIB),
        memory_total_bytes=None if not total else int(total * MIB),
        utilization_pct=None if util is None or util > 100 else util,
        power_w=values.get(POWER_USAGE),
        energy_j=None if energy_mj is None else energy_mj / 1000.0,
        temperature_c=values.get(GPU_TEMP),
        sm_clock_mhz=values.get(SM_CLOCK),
        throttle_reasons=None if reasons is None else int(reasons),
        dram_active=None if dram is None or dram > 1.0 else dram,
        hostname=gpu.labels.get("Hostname") or None,
        pci_bus_id=gpu.labels.get("pci_bus_id") or None,
    )


def parse_dcgm_page(text: str) -> list[GpuSample]:
    """Whole-GPU samples from dcgm-exporter text. Raises `MetricsFormatError` on non-Prometheus text."""
    return gpus_from_samples(parse_metrics_text(text))


async def read_dcgm(
    client: httpx.AsyncClient,
    url: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> GpuReading | GpuUnavailable:
    """GET a dcgm-exporter page (timeout, size cap). Never raises: a failure is a `GpuUnavailable`."""
    scrape = await scrape_metrics(client, url, timeout_s=timeout_s, max_bytes=max_bytes)
    if scrape.samples is None:
        return GpuUnavailable("dcgm", f"DCGM exporter {url}: {scrape.error}", url)
    gpus = gpus_from_samples(scrape.samples)
    if not gpus:
        return GpuUnavailable("dcgm", f"DCGM exporter {url}: no DCGM_FI_DEV_* GPU samples on the page", url)
    return GpuReading("dcgm", scrape.time, scrape.monotonic, tuple(gpus), url)


class DcgmSource:
    """One exporter URL read with a shared client: `await source.read()`."""

    def __init__(self, client: httpx.AsyncClient, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.client = client
        self.url = url
        self.timeout_s = timeout_s

    async def read(self) -> GpuReading | GpuUnavailable:
        return await read_dcgm(self.client, self.url, timeout_s=self.timeout_s)


__all__ = [
    "DcgmSource",
    "MetricsFormatError",
    "gpus_from_samples",
    "parse_dcgm_page",
    "read_dcgm",
]
