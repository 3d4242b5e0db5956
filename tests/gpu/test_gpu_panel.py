"""The GPU panel: its lines as plain data, and on the dashboard against simulators and exporter pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.sim.conftest import write_vllm_config
from tests.telemetry.metrics_test_server import Reply, ReplyServer
from tests.ui.ui_waiting import wait_for
from tui.gpu.history import GpuHistory, combined_series
from tui.gpu.models import REASON_GPU_IDLE, REASON_SW_POWER_CAP, GpuSample
from tui.gpu.monitor import EndpointGpus
from tui.paths import themes_dir
from tui.screens.detail import DetailScreen
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.sim.config import SimConfig
from tui.sim.gpu_page import GPU_METRICS_PATH, SimGpus
from tui.sim.server import SimServer
from tui.ui.app import SpectopApp
from tui.widgets.chart import Chart
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.gpu_panel import GpuCharts, GpuStrip, card_gpu_line, strip_lines


@pytest.fixture(autouse=True)
def _private_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[SimServer]:
    """A vLLM sim with --gpu (k = 2) under background load, so its figures show drafting."""
    config = write_vllm_config(tmp_path / "config.toml", k=2, gpu_memory_utilization=0.92)
    server = SimServer(flavor="vllm", config_path=config, background_load_rps=20.0, gpu=True)
    async with server:
        yield server


def _sim_app(sim: SimServer, gpus: str) -> SpectopApp:
    """The dashboard of the sim, its GPUs read from the exporter page at `gpus`."""
    return _app(EndpointSettings(name="sim", url=sim.base_url, backend="vllm", gpu_metrics_url=gpus))


def _app(*endpoints: EndpointSettings) -> SpectopApp:
    settings = Settings(
        poll_interval_s=0.25, window_s=1.0, alerts=AlertSettings(sustained_s=0.5), endpoints=list(endpoints)
    )
    return SpectopApp(settings, theme_folders=[themes_dir()], remember_theme_choice=False)


def _card_text(app: SpectopApp) -> str:
    card = app.screen.query_one(EndpointCard)
    return "\n".join(line.plain for line in card.data.gpu_line(76))


def _busy_pages(count: int = 40) -> list[Reply]:
    """dcgm-exporter pages of a busy GPU at gpu_memory_utilization 0.92, k = 2 (the sim's memory model)."""
    gpus = SimGpus(SimConfig(gpu_memory_utilization=0.92, num_speculative_tokens=2), lambda: (48, 0, 0.8))
    return [Reply(gpus.render(now=float(step)).encode()) for step in range(count)]


async def test_card_gpu_line_and_detail_charts_from_the_sims_page(sim: SimServer) -> None:
    app = _sim_app(sim, sim.base_url + GPU_METRICS_PATH)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "GPU0 mem" in _card_text(app))
        line = _card_text(app)
        assert "/79.6G" in line and "util" in line and "W" in line and "°C" in line
        assert app.screen.query_one(EndpointCard).has_class("gpu")  # a row more for it
        assert not app.screen.query_one(GpuStrip).has_class("visible")  # its own GPUs: no strip
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        charts = app.screen.query_one(GpuCharts)
        await wait_for(
            pilot,
            lambda: (
                not charts.has_class("absent")
                and len(charts.query_one("#gpu-chart-power", Chart).values) >= 2
            ),
        )
        for chart_id in ("#gpu-chart-memory", "#gpu-chart-power", "#gpu-chart-util"):
            values = charts.query_one(chart_id, Chart).values
            assert values and all(value is not None for value in values)
        memory = charts.query_one("#gpu-chart-memory", Chart).values
        assert all(0.9 < value < 1.0 for value in memory if value is not None)


async def test_no_gpu_data_is_one_line_saying_why(sim: SimServer) -> None:
    async with ReplyServer([Reply(b"", status=404)]) as exporter:
        app = _sim_app(sim, exporter.url + "/metrics")
        async with app.run_test(size=(80, 24)) as pilot:
            strip = app.screen.query_one(GpuStrip)
            await wait_for(pilot, lambda: strip.has_class("visible"))
            text = str(strip.render())
            assert text.count("\n") == 0 and "no GPU panel:" in text and "404" in text
            assert _card_text(app) == ""  # said once at the top, not again on the card
            await pilot.press("enter")
            charts = app.screen.query_one(GpuCharts)
            await wait_for(pilot, lambda: charts.has_class("absent"))
            assert "no GPU charts:" in str(charts.query_one("#gpu-absent").render())


async def test_memory_alert_with_speculation_on_at_95_percent(sim: SimServer) -> None:
    async with ReplyServer(_busy_pages()) as exporter:
        app = _sim_app(sim, exporter.url + "/metrics")
        async with app.run_test(size=(80, 24)) as pilot:
            board = app.board

            def alert() -> bool:
                return any(a.kind == "gpu_memory_high" for a in board.alerts.active("sim"))

            await wait_for(pilot, alert)
            (found,) = [a for a in board.alerts.active("sim") if a.kind == "gpu_memory_high"]
            assert found.severity == "warning" and "with speculation on" in found.message
            assert board.speculation_on("sim") is True
            fraction = board.gpus["sim"].gpus[0].memory_fraction
            assert fraction is not None and fraction >= 0.95
            await wait_for(pilot, lambda: app.screen.query_one(EndpointCard).has_class("alert-warning"))


async def test_shared_gpus_are_one_strip_at_the_top() -> None:
    async with ReplyServer(_busy_pages()) as exporter:
        page = exporter.url + "/metrics"
        app = _app(
            EndpointSettings(name="a", url="http://127.0.0.1:1", gpu_metrics_url=page),
            EndpointSettings(name="b", url="http://127.0.0.1:2", gpu_metrics_url=page),
        )
        async with app.run_test(size=(80, 24)) as pilot:
            strip = app.screen.query_one(GpuStrip)
            await wait_for(pilot, lambda: strip.has_class("visible"))
            text = str(strip.render())
            assert text.startswith("GPU0 mem") and "shared: a, b" in text
            assert all(not card.data.gpu_line(76) for card in app.screen.query(EndpointCard))


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


def test_one_gpu_is_one_line_within_80_columns_several_are_summed() -> None:
    view = EndpointGpus("a", "http://x/metrics", (_gpu(0),))
    line = card_gpu_line(view, frozenset(), {"a": view}, 76)
    assert line is not None
    assert line.plain == "GPU0 mem 71.2/80.0G ███████░ 89% util 89% 310W 62°C clk ok"
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
