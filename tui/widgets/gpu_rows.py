"""One row per GPU (nvitop-class) on the GPU screen (`g`) and the detail screen (`G`): bars, power,
temperature, clock and throttle reasons, MIG slices and processes; parts that do not fit go whole."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from tui.format import UNKNOWN, fmt_gib_number, fmt_rate, fmt_whole
from tui.gpu.models import REASON_GPU_IDLE, GpuSample, GpuSlice, reason_names
from tui.gpu.monitor import NVML_SOURCE, EndpointGpus
from tui.gpu.text import memory_bar
from tui.sanitize import safe_line
from tui.widgets.gpu_panel import MEMORY_WARN_FRACTION, Segments

ROW_BAR = 10
MAX_PROCESS_ROWS = 4  # per GPU; the rest is a count
ROW_DROP_ORDER = ("name", "util_bar", "clock", "memory_bar", "temp", "memory", "util")


def _muted(text: str) -> tuple[str, str]:
    return (text, "$text-muted")


def _bold(text: str) -> tuple[str, str]:
    return (text, "$text-muted" if UNKNOWN in text else "bold")


def _figure(value: float | None, unit: str) -> str:
    return UNKNOWN if value is None else f"{fmt_whole(value)}{unit}"


def reasons_text(gpu: GpuSample) -> tuple[str, str]:
    """`⚠ power cap, thermal (software)` when clocks are held down, `clocks ok`, or `clocks –`."""
    if gpu.throttle_reasons is None:
        return _muted(f"clocks {UNKNOWN}")
    names = reason_names(gpu.throttle_reasons & ~REASON_GPU_IDLE)
    if gpu.throttling:
        return (f"⚠ {', '.join(names)}", "$warning bold")
    idle = " (idle)" if gpu.throttle_reasons & REASON_GPU_IDLE else ""
    return _muted(f"clocks ok{idle}")


def row_groups(gpu: GpuSample) -> list[tuple[str, Segments]]:
    util = gpu.utilization_pct
    mig = f" MIG ×{len(gpu.slices)}" if gpu.slices else ""
    return [
        ("label", [(f"GPU{gpu.index}" if gpu.index is not None else safe_line(gpu.key), "bold")]),
        ("name", [_muted(" " + safe_line(gpu.name or UNKNOWN))]),
        ("mig", [_muted(mig)]),
        *_memory_groups(gpu.memory_fraction, gpu.memory_used_bytes, gpu.memory_total_bytes),
        ("util", [_muted("  util ")]),
        ("util_bar", [(memory_bar(None if util is None else util / 100, ROW_BAR), "$success"), (" ", "")]),
        ("util", [_bold(_figure(util, "%"))]),
        ("power", [(" ", ""), _bold(_figure(gpu.power_w, " W"))]),
        ("temp", [(" ", ""), _bold(_figure(gpu.temperature_c, " °C"))]),
        ("clock", [_muted(" SM "), _bold(_figure(gpu.sm_clock_mhz, " MHz"))]),
        ("reasons", [(" ", ""), reasons_text(gpu)]),
    ]  # fmt: skip


def _memory_groups(fraction: float | None, used: int | None, total: int | None) -> list[tuple[str, Segments]]:
    style = "$warning bold" if fraction is not None and fraction >= MEMORY_WARN_FRACTION else "$primary"
    memory = f"{fmt_gib_number(used)}/{fmt_gib_number(total)}G" if used is not None and total else UNKNOWN
    return [
        ("mem_label", [_muted("  mem ")]),
        ("memory_bar", [(memory_bar(fraction, ROW_BAR), style), (" ", "")]),
        ("memory", [_bold(memory), (" ", "")]),
        ("percent", [(fmt_rate(fraction), style if fraction is not None else "$text-muted")]),
    ]


def slice_groups(part: GpuSlice) -> list[tuple[str, Segments]]:
    """A MIG slice under its GPU: `  └ MIG 3g.40gb #1  mem ████████░░ 34.7/39.2G 88%  busy 91%`."""
    active = part.engine_active
    return [
        ("label", [_muted("  └ "), (safe_line(part.label), "")]),
        *_memory_groups(part.memory_fraction, part.memory_used_bytes, part.memory_total_bytes),
        ("util", [_muted("  busy "), _bold(UNKNOWN if active is None else fmt_rate(active))]),
    ]


def slice_rows(gpu: GpuSample, width: int) -> list[Content]:
    """The GPU's MIG slices, a line each (none when it is not in MIG mode)."""
    lines: list[Content] = []
    for part in gpu.slices:
        lines += fit_row(slice_groups(part), width)
    return lines


def _length(groups: list[tuple[str, Segments]]) -> int:
    return sum(len(text) for _name, segments in groups for text, _style in segments)


def fit_row(groups: list[tuple[str, Segments]], width: int) -> list[Content]:
    """The parts that fit in `width`, `ROW_DROP_ORDER` left out first; throttle reasons may wrap below."""
    kept = list(groups)
    for name in ROW_DROP_ORDER:
        if _length(kept) <= width:
            break
        kept = [group for group in kept if group[0] != name]
    below: list[Content] = []
    if _length(kept) > width:
        reasons = next((segments for name, segments in kept if name == "reasons"), [])
        kept = [group for group in kept if group[0] != "reasons"]
        text, style = reasons[-1] if reasons else ("", "")
        below = [Content.styled("  " + line, style) for line in textwrap.wrap(text, max(10, width - 2))]
    row = Content.assemble(*[segment for _name, segments in kept for segment in segments])
    return [row, *below]


def process_lines(gpu: GpuSample, width: int) -> list[Content]:
    """The processes on `gpu`, largest first, a few and a count of the rest."""
    if gpu.processes is None:
        return []
    if not gpu.processes:
        return [Content.styled("    no processes", "$text-muted")]
    ordered = sorted(gpu.processes, key=lambda p: -(p.used_memory_bytes or 0))
    lines = []
    for process in ordered[:MAX_PROCESS_ROWS]:
        used = (
            UNKNOWN if process.used_memory_bytes is None else f"{fmt_gib_number(process.used_memory_bytes)}G"
        )
        head = f"    pid {process.pid:<8} {used:>7}  "
        name = safe_line(process.name or UNKNOWN)
        room = max(0, width - len(head))
        lines.append(
            Content.assemble(
                _muted(head), (name if len(name) <= room else name[: max(0, room - 1)] + "…", "")
            )
        )
    if len(ordered) > MAX_PROCESS_ROWS:
        lines.append(Content.styled(f"    + {len(ordered) - MAX_PROCESS_ROWS} more processes", "$text-muted"))
    return lines


def gpu_rows(gpus: Sequence[GpuSample], width: int) -> list[Content]:
    """One row per GPU, its processes under it."""
    lines: list[Content] = []
    for gpu in gpus:
        lines += fit_row(row_groups(gpu), width)
        lines += slice_rows(gpu, width)
        lines += process_lines(gpu, width)
    return lines


def screen_lines(views: Mapping[str, EndpointGpus], shared: frozenset[str], width: int) -> list[Content]:
    """Every endpoint's GPUs under a title each (shared ones once); or why an endpoint has none."""
    lines: list[Content] = []
    shared_users = [name for name, view in views.items() if set(view.keys) & shared]
    if shared_users:
        seen: dict[str, GpuSample] = {}
        for name in shared_users:
            for gpu in views[name].gpus:
                if gpu.key in shared:
                    seen.setdefault(gpu.key, gpu)
        ordered = sorted(seen.values(), key=lambda gpu: (gpu.index is None, gpu.index or 0, gpu.key))
        lines.append(Content.styled(safe_line(f"shared: {', '.join(shared_users)}"), "bold $accent"))
        lines += gpu_rows(ordered, width)
        lines += _no_processes(ordered, views[shared_users[0]].source)
    for name, view in views.items():
        title = safe_line(f"{name} · {view.source or 'no GPU source'}")
        if not view.available:
            lines.append(Content.assemble((safe_line(name), "bold $accent"), _muted(f"  {UNKNOWN} ")))
            lines.append(Content.styled("  " + safe_line(view.reason or "no GPU source"), "$text-muted"))
            continue
        own = [gpu for gpu in view.gpus if gpu.key not in shared]
        if not own:
            continue
        lines.append(Content.styled(title, "bold $accent"))
        lines += gpu_rows(own, width)
        lines += _no_processes(own, view.source)
    return lines or [
        Content.styled(f"{UNKNOWN} no GPU data yet (the first GPU poll has not answered)", "$text-muted")
    ]


def _no_processes(gpus: Sequence[GpuSample], source: str) -> list[Content]:
    if not any(gpu.processes is None for gpu in gpus):
        return []
    why = (
        "NVML gives no process list here"
        if source == NVML_SOURCE
        else "dcgm-exporter does not list processes"
    )
    return [Content.styled(f"    processes: {UNKNOWN} ({why})", "$text-muted")]


def endpoint_lines(view: EndpointGpus | None, width: int, no_poll: str) -> list[Content]:
    """One endpoint's GPUs, one row each; or the line saying why there are none."""
    if view is None:
        return [Content.styled(f"{UNKNOWN} {no_poll}", "$text-muted")]
    if not view.available:
        return [Content.styled(f"{UNKNOWN} {safe_line(view.reason or 'no GPU source')}", "$text-muted")]
    return [*gpu_rows(view.gpus, width), *_no_processes(view.gpus, view.source)]


class GpuRowsPane(VerticalScroll):
    """The detail screen's GPU section as one row per GPU (instead of its charts)."""

    DEFAULT_CSS = """
    GpuRowsPane { height: auto; max-height: 50%; padding: 0 1; display: none; }
    GpuRowsPane.visible { display: block; }
    GpuRowsPane > Static { width: 100%; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="gpu-rows-lines")

    def show(self, view: EndpointGpus | None, width: int, no_poll: str) -> list[Content]:
        """Redraw with `view` at `width` columns; returns the lines drawn."""
        lines = endpoint_lines(view, width, no_poll)
        self.query_one("#gpu-rows-lines", Static).update(Content("\n").join(lines))
        return lines
