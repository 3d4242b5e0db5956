"""The GPU panel's lines as plain data: one line per card at 80 columns, several GPUs summed, unknown as
"–", throttling marked, and what a server sent made safe before it is shown."""

from __future__ import annotations

from tui.gpu.history import GpuHistory, combined_series
from tui.gpu.models import REASON_GPU_IDLE, REASON_SW_POWER_CAP, GpuSample
from tui.gpu.monitor import EndpointGpus
from tui.widgets.gpu_panel import card_gpu_line, strip_lines

GIB = 2**30


def _gpu(index: int, used: float = 71.2, power: float | None = 310.0, reasons: int | None = 0) -> GpuSample:
    return GpuSample(
        index=index,
        uuid=f"GPU-{index}",
        memory_used_bytes=int(used * GIB),
        memory_total_bytes=80 * GIB,
        utilization_pct=89.0,
        power_w=power,
        temperature_c=62.0,
        throttle_reasons=reasons,
    )


def test_one_gpu_is_one_line_within_80_columns() -> None:
    view = EndpointGpus("a", "http://x/metrics", (_gpu(0),))
    line = card_gpu_line(view, frozenset(), {"a": view}, 76)
    assert line is not None
    assert line.plain == "GPU0 mem 71.2/80.0G ███████░ 89% util 89% 310W 62°C clk ok"


def test_several_gpus_summed_unknown_power_and_throttling() -> None:
    gpus = (_gpu(0, reasons=REASON_SW_POWER_CAP), _gpu(1, power=None, reasons=REASON_GPU_IDLE))
    view = EndpointGpus("a", "NVML", gpus)
    line = card_gpu_line(view, frozenset(), {"a": view}, 76)
    assert line is not None
    assert line.plain.startswith("GPU0-1 mem 142.4/160.0G")
    assert "–W" in line.plain  # one GPU without a power reading: the sum is unknown, not a part of it
    assert line.plain.endswith("⚠ power cap")


def test_server_text_in_a_reason_is_made_safe() -> None:
    views = {
        "a": EndpointGpus("a", "http://x", reason="bad page \x1b[2J\x1b]0;owned\x07 here"),
        "b": EndpointGpus("b", "NVML", (_gpu(0),)),
    }
    line = card_gpu_line(views["a"], frozenset(), views, 76)
    assert line is not None and "\x1b" not in line.plain and "\x07" not in line.plain
    assert line.plain.startswith("GPU – no GPU panel: bad page")
    same = {"a": views["a"], "c": EndpointGpus("c", "http://x", reason=views["a"].reason)}
    assert card_gpu_line(same["a"], frozenset(), same, 76) is None  # the same reason everywhere: the strip
    (strip,) = strip_lines(same, frozenset(), 80)
    assert "\x1b" not in strip.plain and "no GPU panel" in strip.plain


def test_combined_series_holds_each_gpus_last_value() -> None:
    history = GpuHistory()
    history.add_sample(1.0, _gpu(0, power=100.0))
    history.add_sample(1.0, _gpu(1, power=200.0))
    history.add_sample(2.0, _gpu(0, power=150.0))  # GPU 1 served its cached sample: it holds 200
    times, values = combined_series(history, ["GPU-0", "GPU-1"], "power_w", "sum", 0.0)
    assert times == [1.0, 2.0] and values == [300.0, 350.0]
