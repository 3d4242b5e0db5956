"""NVIDIA dcgm-exporter pages into `GpuSample`s (MIG instances as slices; DCGM's blanks and NaN are None)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httpx

from tui.gpu.models import GpuReading, GpuSample, GpuSlice, GpuUnavailable
from tui.telemetry.prometheus import Sample, parse_metrics_text
from tui.telemetry.scraper import scrape_metrics

MIB = 2**20
UNKNOWN_PROFILE = "?"  # a MIG line without its profile or id label
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
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
CLOCKS_EVENT_REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
CLOCK_THROTTLE_REASONS = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"  # the name before DCGM 3.2

KNOWN_FIELDS = frozenset({
    FB_USED, FB_FREE, FB_RESERVED, FB_TOTAL, GPU_UTIL, POWER_USAGE, TOTAL_ENERGY, SM_CLOCK, GPU_TEMP,
    DRAM_ACTIVE, GR_ENGINE_ACTIVE, CLOCKS_EVENT_REASONS, CLOCK_THROTTLE_REASONS,
})  # fmt: skip

_INT32_BLANK = 0x7FFFFFF0
_FP64_BLANK = 2.0**47  # 140737488355328.0; the int64 blanks (0x7ffffffffffffff0..) are above it too
_MIG_LABELS = ("GPU_I_ID", "GPU_I_PROFILE")
# The parent GPU's own fields, repeated unchanged on each of its MIG instances' lines.
DEVICE_FIELDS = (POWER_USAGE, TOTAL_ENERGY, GPU_TEMP, SM_CLOCK, CLOCKS_EVENT_REASONS, CLOCK_THROTTLE_REASONS)


def _clean(name: str, value: float) -> float | None:
    """The value, or None for NaN / Inf / DCGM blank sentinels / negative readings."""
    if not math.isfinite(value) or value < 0 or value >= _FP64_BLANK:
        return None
    if name != TOTAL_ENERGY and _INT32_BLANK <= value < 2**31:
        return None  # an int32 field's "blank"; a real energy counter can be this large
    return value


Values = dict[str, float | None]


@dataclass
class _Gpu:
    index: int | None
    uuid: str | None
    labels: dict[str, str]
    values: Values = field(default_factory=dict)  # its whole-GPU lines
    slices: dict[tuple[str, str], Values] = field(default_factory=dict)  # (profile, id): its MIG lines


def _gpu_identity(labels: Mapping[str, str]) -> tuple[int | None, str | None]:
    raw_index = labels.get("gpu", "")
    index = int(raw_index) if raw_index.isdigit() else None
    return index, labels.get("UUID") or None


def gpus_from_samples(samples: Iterable[Sample]) -> list[GpuSample]:
    """GPU samples of a dcgm-exporter page in GPU index order (a MIG instance is a slice of its GPU)."""
    gpus: dict[tuple[int | None, str | None], _Gpu] = {}
    for sample in samples:
        if sample.name not in KNOWN_FIELDS:
            continue
        index, uuid = _gpu_identity(sample.labels)
        if index is None and uuid is None:
            continue  # not a per-GPU sample (a custom counter without labels)
        gpu = gpus.get((index, uuid))
        if gpu is None:
            gpu = gpus[(index, uuid)] = _Gpu(index, uuid, dict(sample.labels))
        value = _clean(sample.name, sample.value)
        if any(label in sample.labels for label in _MIG_LABELS):
            instance = (sample.labels.get("GPU_I_PROFILE", ""), sample.labels.get("GPU_I_ID", ""))
            gpu.slices.setdefault(instance, {})[sample.name] = value
        else:
            gpu.values[sample.name] = value
    result = [_to_sample(gpu) for gpu in gpus.values()]
    result.sort(key=lambda gpu: (gpu.index is None, gpu.index or 0, gpu.uuid or ""))
    return result


def _memory(values: Values) -> tuple[int | None, int | None]:
    """Used and total framebuffer in bytes (total: FB_TOTAL, else used + free + reserved)."""
    used = values.get(FB_USED)
    total = values.get(FB_TOTAL)
    if total is None and used is not None and values.get(FB_FREE) is not None:
        total = used + (values.get(FB_FREE) or 0.0) + (values.get(FB_RESERVED) or 0.0)
    return (None if used is None else int(used * MIB)), (None if not total else int(total * MIB))


def _slice(instance: tuple[str, str], values: Values) -> GpuSlice:
    used, total = _memory(values)
    active = values.get(GR_ENGINE_ACTIVE)
    return GpuSlice(
        profile=instance[0] or UNKNOWN_PROFILE,
        instance_id=instance[1] or UNKNOWN_PROFILE,
        memory_used_bytes=used,
        memory_total_bytes=total,
        engine_active=None if active is None or active > 1.0 else active,
    )


def _instance_order(instance: tuple[str, str]) -> tuple[int, str]:
    profile, number = instance
    return (int(number) if number.isdigit() else 1 << 30, profile)


def _whole_from_slices(slices: list[tuple[GpuSlice, Values]]) -> tuple[Values, int | None, int | None]:
    """What a GPU seen only through its MIG instances says: its device-wide fields (from the first
    instance giving each), and its memory as the instances' sums (unknown when one instance's is)."""
    values: Values = {}
    for name in DEVICE_FIELDS:
        known = [v[name] for _, v in slices if v.get(name) is not None]
        if known:
            values[name] = known[0]
    used = [part.memory_used_bytes for part, _ in slices]
    total = [part.memory_total_bytes for part, _ in slices]
    return (
        values,
        None if any(u is None for u in used) else sum(u for u in used if u is not None),
        None if any(t is None for t in total) else sum(t for t in total if t is not None),
    )


def _to_sample(gpu: _Gpu) -> GpuSample:
    ordered = sorted(gpu.slices, key=_instance_order)
    slices = [(_slice(instance, gpu.slices[instance]), gpu.slices[instance]) for instance in ordered]
    values = gpu.values
    if values:
        used, total = _memory(values)
    else:  # MIG mode on a 3.x page: the GPU is the sum of its instances
        values, used, total = _whole_from_slices(slices)
    energy_mj = values.get(TOTAL_ENERGY)
    reasons = values.get(CLOCKS_EVENT_REASONS, values.get(CLOCK_THROTTLE_REASONS))
    dram = values.get(DRAM_ACTIVE)
    util = values.get(GPU_UTIL)
    return GpuSample(
        index=gpu.index,
        uuid=gpu.uuid,
        name=gpu.labels.get("modelName") or None,
        memory_used_bytes=used,
        memory_total_bytes=total,
        utilization_pct=None if util is None or util > 100 else util,
        power_w=values.get(POWER_USAGE),
        energy_j=None if energy_mj is None else energy_mj / 1000.0,
        temperature_c=values.get(GPU_TEMP),
        sm_clock_mhz=values.get(SM_CLOCK),
        throttle_reasons=None if reasons is None else int(reasons),
        dram_active=None if dram is None or dram > 1.0 else dram,
        slices=tuple(part for part, _ in slices),
    )


def parse_dcgm_page(text: str) -> list[GpuSample]:
    """GPU samples from dcgm-exporter text (`MetricsFormatError` on non-Prometheus text)."""
    return gpus_from_samples(parse_metrics_text(text))


async def read_dcgm(
    client: httpx.AsyncClient, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> GpuReading | GpuUnavailable:
    """GET a dcgm-exporter page (timeout, size cap). Never raises: a failure is a `GpuUnavailable`."""
    scrape = await scrape_metrics(client, url, timeout_s=timeout_s, max_bytes=DEFAULT_MAX_BYTES)
    if scrape.samples is None:
        return GpuUnavailable("dcgm", f"DCGM exporter {url}: {scrape.error}")
    gpus = gpus_from_samples(scrape.samples)
    if not gpus:
        return GpuUnavailable("dcgm", f"DCGM exporter {url}: no DCGM_FI_DEV_* GPU samples on the page")
    return GpuReading("dcgm", scrape.time, scrape.monotonic, tuple(gpus))
