"""The GPU panel: one line per card, or a strip at the top of the dashboard when endpoints share GPUs
(several GPUs of one endpoint make one line: memory and power summed, utilisation the mean); charts on the
detail screen; and one row per GPU (nvitop-class) on the GPU screen (`g`) and the detail screen (`G`):
bars, power, temperature, clock and throttle reasons, MIG slices and processes, parts that do not fit
left out whole."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from tui.format import UNKNOWN, fmt_gib_number, fmt_rate, fmt_whole
from tui.gpu.history import GpuHistory, combined_series
from tui.gpu.models import REASON_GPU_IDLE, THROTTLING_REASONS, GpuSample, GpuSlice, reason_names
from tui.gpu.monitor import NVML_SOURCE, EndpointGpus
from tui.gpu.text import memory_bar
from tui.sanitize import safe_line
from tui.widgets.chart import Chart, ChartSpec

BAR_WIDTH = 8
MEMORY_WARN_FRACTION = 0.95
MAX_STRIP_LINES = 4  # shared GPUs beyond this make one summed line


def _label(text: str) -> tuple[str, str]:
    return (text, "$text-muted")


def _value(text: str) -> tuple[str, str]:
    return (text, "$text-muted" if UNKNOWN in text else "bold")


def _figure(value: float | None, unit: str, words: Callable[[float | None], str] = fmt_whole) -> str:
    """`value` in `words` with its unit, or "–" alone."""
    text = words(value)
    return text if text == UNKNOWN else text + unit


def _sum(values: Sequence[float | None]) -> float | None:
    return None if not values or any(value is None for value in values) else sum(v or 0.0 for v in values)


def gpus_label(gpus: Sequence[GpuSample]) -> str:
    """`GPU0`, `GPU0-3` (consecutive indices), `GPU0,2`, or `2 GPUs`."""
    indices = [gpu.index for gpu in gpus]
    if len(gpus) == 1:
        return f"GPU{indices[0]}" if indices[0] is not None else "GPU"
    if any(index is None for index in indices):
        return f"{len(gpus)} GPUs"
    known = sorted(index for index in indices if index is not None)
    if known == list(range(known[0], known[-1] + 1)):
        return f"GPU{known[0]}-{known[-1]}"
    return "GPU" + ",".join(str(index) for index in known)


Segments = list[tuple[str, str]]
# What a GPU line leaves out first when it does not fit (parts are shown whole or not at all).
DROP_ORDER = ("bar", "temp", "memory", "util", "clk", "power")


def gpu_groups(gpus: Sequence[GpuSample]) -> list[tuple[str, Segments]]:
    used = _sum([gpu.memory_used_bytes for gpu in gpus])
    total = _sum([gpu.memory_total_bytes for gpu in gpus])
    fraction = used / total if used is not None and total else None
    fullest = max((f for gpu in gpus if (f := gpu.memory_fraction) is not None), default=None)
    memory_style = "$warning bold" if fullest is not None and fullest >= MEMORY_WARN_FRACTION else "$primary"
    util = _sum([gpu.utilization_pct for gpu in gpus])
    temps = [gpu.temperature_c for gpu in gpus]
    temp = None if any(t is None for t in temps) else max(t or 0.0 for t in temps)
    return [
        ("label", [(gpus_label(gpus), "bold")]),
        ("memory", [
            _label(" mem "),
            _value(fmt_gib_number(used)),
            _label("/"),
            _value(_figure(total, "G", fmt_gib_number)),
        ]),
        ("bar", [(" ", ""), (memory_bar(fraction, BAR_WIDTH), memory_style)]),
        ("percent", [(" ", ""), (fmt_rate(fraction), memory_style if fraction is not None else "$text-muted")]),  # noqa: E501
        ("util", [_label(" util "), _value(_percent(None if util is None else util / len(gpus)))]),
        ("power", [(" ", ""), _value(fmt_whole(_sum([gpu.power_w for gpu in gpus])) + "W")]),
        ("temp", [(" ", ""), _value(fmt_whole(temp) + "°C")]),
        ("clk", [(" ", ""), *throttle_segment(gpus)]),
    ]  # fmt: skip


def _length(groups: list[tuple[str, Segments]]) -> int:
    return sum(len(text) for _name, segments in groups for text, _style in segments)


def _dropped(
    groups: list[tuple[str, Segments]], order: Sequence[str], width: int
) -> list[tuple[str, Segments]]:
    """`groups` less whole parts named in `order`, first to last, until they fit in `width`."""
    kept = list(groups)
    for name in order:
        if _length(kept) <= width:
            break
        kept = [group for group in kept if group[0] != name]
    return kept


def shared_gpus(views: Mapping[str, EndpointGpus], shared: frozenset[str]) -> list[GpuSample]:
    gpus: dict[str, GpuSample] = {}
    for gpu in (gpu for view in views.values() for gpu in view.gpus if gpu.key in shared):
        gpus.setdefault(gpu.key, gpu)
    return sorted(gpus.values(), key=lambda gpu: (gpu.index is None, gpu.index or 0, gpu.key))


def gpu_segments(gpus: Sequence[GpuSample], width: int) -> Segments:
    """`GPU0 mem 71.2/79.6G ███████░ 89% util 97% 610W 62°C clk ok`: the parts that fit `width`, whole parts
    left out in `DROP_ORDER` (never cutting one)."""
    kept = _dropped(gpu_groups(gpus), DROP_ORDER, width)
    return [segment for _name, segments in kept for segment in segments]


def throttle_segment(gpus: Sequence[GpuSample]) -> list[tuple[str, str]]:
    """`⚠ power cap` when a reason that slows a busy GPU is set, `clk ok`, or `clk –` (no reasons)."""
    masks = [gpu.throttle_reasons for gpu in gpus]
    if any(mask is None for mask in masks):
        return [_label("clk "), _label(UNKNOWN)]
    mask = 0
    for value in masks:
        mask |= (value or 0) & THROTTLING_REASONS & ~REASON_GPU_IDLE
    if not mask:
        return [_label("clk ok")]
    return [(f"⚠ {', '.join(reason_names(mask))}", "$warning bold")]


def reason_line(reason: str) -> Content:
    return Content.assemble(_label("GPU "), _label(UNKNOWN), _label(f" no GPU panel: {safe_line(reason)}"))


def all_same_reason(views: Mapping[str, EndpointGpus]) -> str | None:
    """The reason when no endpoint has GPUs and they all give the same one (then it is said once)."""
    reasons = {view.reason for view in views.values()}
    if not views or any(view.available for view in views.values()) or len(reasons) != 1:
        return None
    return next(iter(reasons)) or "no GPU source"


def card_gpu_line(
    view: EndpointGpus | None, shared: frozenset[str], views: Mapping[str, EndpointGpus], width: int
) -> Content | None:
    """The card's GPU line, or why it has none; None when the strip says it or no poll happened yet."""
    if view is None or all_same_reason(views) is not None:
        return None
    if not view.available:
        return reason_line(view.reason or "no GPU source").truncate(width, ellipsis=True)
    own = [gpu for gpu in view.gpus if gpu.key not in shared]
    if not own:
        return None
    return Content.assemble(*gpu_segments(own, width))


def strip_lines(views: Mapping[str, EndpointGpus], shared: frozenset[str], width: int) -> list[Content]:
    """The dashboard's strip: the shared GPUs, or the one reason every endpoint has for none."""
    reason = all_same_reason(views)
    if reason is not None:
        return [reason_line(reason).truncate(width, ellipsis=True)]
    if not (ordered := shared_gpus(views, shared)):
        return []
    groups = [[gpu] for gpu in ordered] if len(ordered) <= MAX_STRIP_LINES else [ordered]
    users = ", ".join(safe_line(name) for name, view in views.items() if set(view.keys) & shared)
    lines = [Content.assemble(*gpu_segments(group, width)) for group in groups]
    shared_by = f"  shared: {users}"
    if len(lines[0].plain) + len(shared_by) <= width:
        lines[0] = Content.assemble(lines[0], _label(shared_by))
    return lines


def render_key(
    view: EndpointGpus | None, shared: frozenset[str], views: Mapping[str, EndpointGpus]
) -> object:
    """What the card's GPU line depends on (equal keys: the same line)."""
    return None if view is None else (view.reason, view.gpus, shared, all_same_reason(views) is None)


class GpuStrip(Static):
    """The GPU strip at the top of the dashboard; hidden when it has nothing to say."""

    DEFAULT_CSS = """
    GpuStrip { height: auto; padding: 0 1; display: none; }
    GpuStrip.visible { display: block; }
    """

    def show(self, views: Mapping[str, EndpointGpus], shared: frozenset[str]) -> int:
        lines = strip_lines(views, shared, max(20, self.app.size.width - 2))
        self.set_class(bool(lines), "visible")
        if lines:
            self.update(Content("\n").join(lines))
        return len(lines)


def _percent(value: float | None) -> str:
    """A percent of 100 (a GPU's utilisation) in the vocabulary of rates: "97%"."""
    return fmt_rate(None if value is None else value / 100)


# (chart id, label, GpuSample figure, how several GPUs combine, formatter, style, low, high)
CHARTS = (
    ("gpu-chart-memory", "GPU mem", "memory_fraction", "max", fmt_rate, "$warning", 0.0, 1.0),
    ("gpu-chart-power", "GPU W", "power_w", "sum", lambda value: _figure(value, " W"), "$error", 0.0, None),
    ("gpu-chart-util", "GPU util", "utilization_pct", "mean", _percent, "$success", 0.0, 100.0),
)


class GpuCharts(Horizontal):
    """The detail screen's GPU section: memory, power and utilisation over the window, or why none."""

    DEFAULT_CSS = """
    GpuCharts { height: 4; padding: 0 1; display: none; }
    GpuCharts.absent { height: 1; }
    GpuCharts Chart { height: 4; width: 1fr; margin-right: 1; }
    GpuCharts.absent Chart { display: none; }
    GpuCharts #gpu-absent { display: none; color: $text-muted; }
    GpuCharts.absent #gpu-absent { display: block; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="gpu-absent")
        for chart_id, label, _figure, _how, formatter, style, low, high in CHARTS:
            spec = ChartSpec(_figure, style, low=low, high=high, title=label, text=formatter)
            yield Chart(spec, id=chart_id)

    def show(self, view: EndpointGpus | None, history: GpuHistory, start: float, end: float) -> None:
        self.display = view is not None  # no GPU poll yet (or a replay: GPUs are not recorded): nothing
        if view is None:
            return
        self.set_class(not view.available, "absent")
        if not view.available:
            reason = safe_line(view.reason or "no GPU source")
            self.query_one("#gpu-absent", Static).update(Content(f"{UNKNOWN} no GPU charts: {reason}"))
            return
        for chart_id, _name, figure, how, *_rest in CHARTS:
            chart = self.query_one(f"#{chart_id}", Chart)
            times, values = combined_series(history, view.keys, figure, how, start)  # type: ignore[arg-type]
            chart.set_values(times, values, start, end)


# --- one row per GPU ---------------------------------------------------------------------------------------

ROW_BAR = 10
MAX_PROCESS_ROWS = 4  # per GPU; the rest is a count
ROW_DROP_ORDER = ("name", "util_bar", "clock", "memory_bar", "temp", "memory", "util")


def reasons_text(gpu: GpuSample) -> tuple[str, str]:
    """`⚠ power cap, thermal (software)` when clocks are held down, `clocks ok`, or `clocks –`."""
    if gpu.throttle_reasons is None:
        return _label(f"clocks {UNKNOWN}")
    names = reason_names(gpu.throttle_reasons & ~REASON_GPU_IDLE)
    if gpu.throttling:
        return (f"⚠ {', '.join(names)}", "$warning bold")
    idle = " (idle)" if gpu.throttle_reasons & REASON_GPU_IDLE else ""
    return _label(f"clocks ok{idle}")


def row_groups(gpu: GpuSample) -> list[tuple[str, Segments]]:
    util = gpu.utilization_pct
    mig = f" MIG ×{len(gpu.slices)}" if gpu.slices else ""
    return [
        ("label", [(f"GPU{gpu.index}" if gpu.index is not None else safe_line(gpu.key), "bold")]),
        ("name", [_label(" " + safe_line(gpu.name or UNKNOWN))]),
        ("mig", [_label(mig)]),
        *_memory_groups(gpu.memory_fraction, gpu.memory_used_bytes, gpu.memory_total_bytes),
        ("util", [_label("  util ")]),
        ("util_bar", [(memory_bar(None if util is None else util / 100, ROW_BAR), "$success"), (" ", "")]),
        ("util", [_value(_percent(util))]),
        ("power", [(" ", ""), _value(_figure(gpu.power_w, " W"))]),
        ("temp", [(" ", ""), _value(_figure(gpu.temperature_c, " °C"))]),
        ("clock", [_label(" SM "), _value(_figure(gpu.sm_clock_mhz, " MHz"))]),
        ("reasons", [(" ", ""), reasons_text(gpu)]),
    ]  # fmt: skip


def _memory_groups(fraction: float | None, used: int | None, total: int | None) -> list[tuple[str, Segments]]:
    style = "$warning bold" if fraction is not None and fraction >= MEMORY_WARN_FRACTION else "$primary"
    memory = f"{fmt_gib_number(used)}/{fmt_gib_number(total)}G" if used is not None and total else UNKNOWN
    return [
        ("mem_label", [_label("  mem ")]),
        ("memory_bar", [(memory_bar(fraction, ROW_BAR), style), (" ", "")]),
        ("memory", [_value(memory), (" ", "")]),
        ("percent", [(fmt_rate(fraction), style if fraction is not None else "$text-muted")]),
    ]


def slice_groups(part: GpuSlice) -> list[tuple[str, Segments]]:
    """A MIG slice under its GPU: `  └ MIG 3g.40gb #1  mem ████████░░ 34.7/39.2G 88%  busy 91%`."""
    active = part.engine_active
    return [
        ("label", [_label("  └ "), (safe_line(part.label), "")]),
        *_memory_groups(part.memory_fraction, part.memory_used_bytes, part.memory_total_bytes),
        ("util", [_label("  busy "), _value(UNKNOWN if active is None else fmt_rate(active))]),
    ]


def fit_row(groups: list[tuple[str, Segments]], width: int) -> list[Content]:
    """The parts that fit in `width`, `ROW_DROP_ORDER` left out first; throttle reasons may wrap below."""
    kept = _dropped(groups, ROW_DROP_ORDER, width)
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
        used = _figure(process.used_memory_bytes, "G", fmt_gib_number)
        head = f"    pid {process.pid:<8} {used:>7}  "
        name, room = safe_line(process.name or UNKNOWN), max(0, width - len(head))
        name = name if len(name) <= room else name[: max(0, room - 1)] + "…"
        lines.append(Content.assemble(_label(head), (name, "")))
    if len(ordered) > MAX_PROCESS_ROWS:
        lines.append(Content.styled(f"    + {len(ordered) - MAX_PROCESS_ROWS} more processes", "$text-muted"))
    return lines


def gpu_rows(gpus: Sequence[GpuSample], width: int) -> list[Content]:
    lines: list[Content] = []
    for gpu in gpus:
        lines += fit_row(row_groups(gpu), width)
        for part in gpu.slices:  # MIG slices, a line each
            lines += fit_row(slice_groups(part), width)
        lines += process_lines(gpu, width)
    return lines


def screen_lines(views: Mapping[str, EndpointGpus], shared: frozenset[str], width: int) -> list[Content]:
    """Every endpoint's GPUs under a title each (shared ones once); or why an endpoint has none."""
    lines: list[Content] = []
    shared_users = [name for name, view in views.items() if set(view.keys) & shared]
    if shared_users:
        ordered = shared_gpus(views, shared)
        lines.append(Content.styled(safe_line(f"shared: {', '.join(shared_users)}"), "bold $accent"))
        lines += gpu_rows(ordered, width)
        lines += _no_processes(ordered, views[shared_users[0]].source)
    for name, view in views.items():
        title = safe_line(f"{name} · {view.source or 'no GPU source'}")
        if not view.available:
            lines.append(Content.assemble((safe_line(name), "bold $accent"), _label(f"  {UNKNOWN} ")))
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

    def show(self, view: EndpointGpus | None, width: int, no_poll: str) -> None:
        self.query_one("#gpu-rows-lines", Static).update(
            Content("\n").join(endpoint_lines(view, width, no_poll))
        )
