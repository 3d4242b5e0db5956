"""The GPU panel: one line per card, or a strip at the top of the dashboard when endpoints share GPUs.
Several GPUs of one endpoint make one line (memory and power summed, utilisation the mean)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from tui.format import UNKNOWN, fmt_rate
from tui.gpu.history import GpuHistory, combined_series
from tui.gpu.models import REASON_GPU_IDLE, THROTTLING_REASONS, GpuSample, reason_names
from tui.gpu.monitor import EndpointGpus
from tui.gpu.text import memory_bar
from tui.sanitize import safe_line
from tui.widgets.chart import Chart, ChartSpec

GIB = 2**30
BAR_WIDTH = 8
MEMORY_WARN_FRACTION = 0.95
MAX_STRIP_LINES = 4  # shared GPUs beyond this make one summed line


def _label(text: str) -> tuple[str, str]:
    return (text, "$text-muted")


def _value(text: str) -> tuple[str, str]:
    return (text, "$text-muted" if UNKNOWN in text else "bold")


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
    """The parts of a GPU line, named, in their order on the line."""
    used = _sum([gpu.memory_used_bytes for gpu in gpus])
    total = _sum([gpu.memory_total_bytes for gpu in gpus])
    fraction = used / total if used is not None and total else None
    fullest = max((f for gpu in gpus if (f := gpu.memory_fraction) is not None), default=None)
    memory_style = "$warning bold" if fullest is not None and fullest >= MEMORY_WARN_FRACTION else "$primary"
    utils = [gpu.utilization_pct for gpu in gpus]
    util = None if any(u is None for u in utils) else sum(u or 0.0 for u in utils) / len(utils)
    power = _sum([gpu.power_w for gpu in gpus])
    temps = [gpu.temperature_c for gpu in gpus]
    temp = None if any(t is None for t in temps) else max(t or 0.0 for t in temps)
    return [
        ("label", [(gpus_label(gpus), "bold")]),
        ("memory", [
            _label(" mem "),
            _value(UNKNOWN if used is None else f"{used / GIB:.1f}"),
            _label("/"),
            _value(UNKNOWN if total is None else f"{total / GIB:.1f}G"),
        ]),
        ("bar", [(" ", ""), (memory_bar(fraction, BAR_WIDTH), memory_style)]),
        ("percent", [(" ", ""), (fmt_rate(fraction), memory_style if fraction is not None else "$text-muted")]),  # noqa: E501
        ("util", [_label(" util "), _value(UNKNOWN if util is None else f"{util:.0f}%")]),
        ("power", [(" ", ""), _value(UNKNOWN + "W" if power is None else f"{power:.0f}W")]),
        ("temp", [(" ", ""), _value(UNKNOWN + "°C" if temp is None else f"{temp:.0f}°C")]),
        ("clk", [(" ", ""), *throttle_segment(gpus)]),
    ]  # fmt: skip


def fitted(groups: list[tuple[str, Segments]], width: int) -> Segments:
    """The groups that fit in `width`, leaving out whole parts in `DROP_ORDER` (never cutting one)."""
    kept = list(groups)

    def length() -> int:
        return sum(len(text) for _name, segments in kept for text, _style in segments)

    for name in DROP_ORDER:
        if length() <= width:
            break
        kept = [group for group in kept if group[0] != name]
    return [segment for _name, segments in kept for segment in segments]


def gpu_segments(gpus: Sequence[GpuSample], width: int | None = None) -> Segments:
    """`GPU0 mem 71.2/79.6G ███████░ 89% util 97% 610W 62°C clk ok`, whole parts that fit `width`."""
    groups = gpu_groups(gpus)
    if width is None:
        return [segment for _name, segments in groups for segment in segments]
    return fitted(groups, width)


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
    view: EndpointGpus | None,
    shared: frozenset[str],
    views: Mapping[str, EndpointGpus],
    width: int,
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
    gpus: dict[str, GpuSample] = {}
    for view in views.values():
        for gpu in view.gpus:
            if gpu.key in shared:
                gpus.setdefault(gpu.key, gpu)
    if not gpus:
        return []
    ordered = sorted(gpus.values(), key=lambda gpu: (gpu.index is None, gpu.index or 0, gpu.key))
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
    if view is None:
        return None
    return (view.reason, view.gpus, shared, all_same_reason(views) is None)


class GpuStrip(Static):
    """The GPU strip at the top of the dashboard; hidden when it has nothing to say."""

    DEFAULT_CSS = """
    GpuStrip { height: auto; padding: 0 1; display: none; }
    GpuStrip.visible { display: block; }
    """

    def show(self, views: Mapping[str, EndpointGpus], shared: frozenset[str]) -> int:
        """Redraw; returns the rows it takes (0 when hidden)."""
        lines = strip_lines(views, shared, max(20, self.app.size.width - 2))
        self.set_class(bool(lines), "visible")
        if lines:
            self.update(Content("\n").join(lines))
        return len(lines)


def _watts(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value:.0f} W"


def _util(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value:.0f}%"


# (chart id, label, GpuSample figure, how several GPUs combine, formatter, style, low, high)
CHARTS = (
    ("gpu-chart-memory", "GPU mem", "memory_fraction", "max", fmt_rate, "$warning", 0.0, 1.0),
    ("gpu-chart-power", "GPU W", "power_w", "sum", _watts, "$error", 0.0, None),
    ("gpu-chart-util", "GPU util", "utilization_pct", "mean", _util, "$success", 0.0, 100.0),
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
        if not view.available:
            reason = view.reason or "no GPU source"
            self.add_class("absent")
            self.query_one("#gpu-absent", Static).update(
                Content(f"{UNKNOWN} no GPU charts: {safe_line(reason)}")
            )
            return
        self.remove_class("absent")
        for chart_id, _name, figure, how, *_rest in CHARTS:
            chart = self.query_one(f"#{chart_id}", Chart)
            times, values = combined_series(history, view.keys, figure, how, start)  # type: ignore[arg-type]
            chart.set_values(times, values, start, end)
