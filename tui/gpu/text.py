"""Plain-text GPU lines: what the GPU panel shows, for commands and the device check (no textual)."""

from __future__ import annotations

from tui.format import UNKNOWN as DASH
from tui.format import fmt_gib, fmt_gib_number, fmt_rate, fmt_whole
from tui.gpu.models import GpuReading, GpuSample, GpuSlice, GpuUnavailable

GIB = 2**30
BAR_WIDTH = 10


def memory_bar(fraction: float | None, width: int = BAR_WIDTH) -> str:
    """`███████░░░` for 0.7; dots when the fraction is unknown."""
    if fraction is None:
        return "·" * width
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def _number(value: float | None, unit: str) -> str:
    return DASH if value is None else f"{fmt_whole(value)}{unit}"


def memory_text(gpu: GpuSample | GpuSlice) -> str:
    used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
    if used is None or total is None:
        return f"mem {DASH if used is None else fmt_gib(used)} / {DASH}"
    fraction = gpu.memory_fraction
    percent = fmt_rate(fraction)
    return f"mem {fmt_gib_number(used)} / {fmt_gib(total)} {memory_bar(fraction)} {percent}"


def throttle_text(gpu: GpuSample) -> str:
    if gpu.throttle_reasons is None:
        return f"clocks {DASH}"
    return f"throttled: {gpu.throttle_text}" if gpu.throttling else "clocks ok"


def gpu_line(gpu: GpuSample) -> str:
    """One GPU: `GPU 0 NVIDIA H100 · mem 75.9 / 79.6 GiB █████████░ 95% · util 97% · 612 W · 61 °C · …`."""
    parts = [
        f"{gpu.label} {gpu.name or ''}".rstrip(),
        memory_text(gpu),
        f"util {_number(gpu.utilization_pct, '%')}",
        _number(gpu.power_w, " W"),
        _number(gpu.temperature_c, " °C"),
        f"SM {_number(gpu.sm_clock_mhz, ' MHz')}",
        throttle_text(gpu),
    ]
    return " · ".join(parts)


def slice_line(part: GpuSlice) -> str:
    """One MIG slice under its GPU: `  └ MIG 3g.40gb #1 · mem 34.7 / 39.2 GiB ████████░░ 88% · busy 91%`."""
    busy = DASH if part.engine_active is None else fmt_rate(part.engine_active)
    return f"  └ {part.label} · {memory_text(part)} · busy {busy}"


def panel_lines(result: GpuReading | GpuUnavailable) -> list[str]:
    """The panel as text: one line per GPU (its MIG slices under it), or the one line saying why there
    is no panel."""
    if isinstance(result, GpuUnavailable):
        return [f"no GPU panel: {result.reason}"]
    lines = [f"GPUs from {result.where}:"]
    for gpu in result.gpus:
        lines += [gpu_line(gpu), *(slice_line(part) for part in gpu.slices)]
    return lines
