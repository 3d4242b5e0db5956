"""One GPU reading for a command that runs once (`spectop config lint`, the device check)."""

from __future__ import annotations

import httpx

from tui.gpu.dcgm import read_dcgm
from tui.gpu.models import GpuReading, GpuUnavailable
from tui.gpu.nvml import NvmlSource


async def read_once(gpu_metrics_url: str | None = None) -> GpuReading | GpuUnavailable:
    """The exporter page at `gpu_metrics_url`, else the local GPUs through NVML. Never raises."""
    if gpu_metrics_url:
        async with httpx.AsyncClient(timeout=5.0) as client:
            return await read_dcgm(client, gpu_metrics_url)
    source = NvmlSource()
    try:
        return await source.read()
    finally:
        source.close()
