"""One row per GPU (GPU screen, detail screen): every part, whole parts only at every width."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from tests.gpu.fake_pynvml import FakeDevice, FakeNvml
from tests.ui.recording_factory import write_recording
from tests.ui.ui_waiting import wait_for
from tui.gpu.dcgm import parse_dcgm_page
from tui.gpu.models import REASON_SW_POWER_CAP, REASON_SW_THERMAL, GpuProcess, GpuSample
from tui.gpu.monitor import NVML_SOURCE, EndpointGpus
from tui.gpu.nvml import NvmlSource
from tui.paths import themes_dir
from tui.screens.detail import DetailScreen, GpuScreen
from tui.screens.help import key_rows
from tui.settings import Settings
from tui.sources.updates import GpusPolled
from tui.ui.app import SpectopApp
from tui.widgets.gpu_panel import GpuCharts, GpuRowsPane, gpu_rows, screen_lines
from tui.widgets.log_pane import LogPane

GIB = 2**30
Replayed = tuple[SpectopApp, Pilot[None]]


def busy(index: int, processes: tuple[GpuProcess, ...] | None = None) -> GpuSample:
    return GpuSample(
        index=index, uuid=f"GPU-{index}", name="NVIDIA H100 80GB HBM3", memory_used_bytes=int(68.1 * GIB),
        memory_total_bytes=int(79.6 * GIB), utilization_pct=97.0, power_w=291.0, temperature_c=43.0,
        sm_clock_mhz=1755.0, throttle_reasons=REASON_SW_POWER_CAP | REASON_SW_THERMAL, processes=processes,
    )  # fmt: skip


@pytest.mark.parametrize("width", [36, 76, 116, 196])
def test_a_row_per_gpu_in_whole_parts(width: int) -> None:
    lines = [row.plain for row in gpu_rows([busy(i) for i in range(8)], width)]
    assert all(len(line) <= width and "…" not in line for line in lines)
    rows = [line for line in lines if line.startswith("GPU")]
    assert [row.split()[0] for row in rows] == [f"GPU{i}" for i in range(8)]
    blocks = "\n".join(lines).split("GPU")[1:]  # a GPU's row and the lines under it
    assert all("power cap" in block and "thermal (software)" in block for block in blocks)  # never left out
    for row in rows:
        assert "86%" in row
        if width >= 76:
            assert "291 W" in row and "97%" in row and "68.1/79.6G" in row
        if width >= 116:
            assert "43 °C" in row and "SM 1755 MHz" in row and "██████████" in row
        if width >= 196:
            assert "NVIDIA H100 80GB HBM3" in row


def test_processes_under_their_gpu_and_a_source_that_lists_none_says_so() -> None:
    processes = (GpuProcess(4242, "python3", int(66.2 * GIB)), GpuProcess(77, None, None))
    lines = [line.plain for line in gpu_rows([busy(0, processes), busy(1, ())], 100)]
    assert lines[1].split() == ["pid", "4242", "66.2G", "python3"]
    assert lines[2].split() == ["pid", "77", "–", "–"]
    assert lines[4].strip() == "no processes"
    views = {"mtp-on": EndpointGpus("mtp-on", "http://127.0.0.1:9400/metrics", (busy(0), busy(1)))}
    text = [line.plain for line in screen_lines(views, frozenset(), 100)]
    assert text[0] == "mtp-on · http://127.0.0.1:9400/metrics"
    assert text[-1].strip() == "processes: – (dcgm-exporter does not list processes)"


def test_nvml_gives_the_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml([FakeDevice(processes=[(1, 2 * GIB)]), FakeDevice(processes=None)])
    monkeypatch.setitem(__import__("sys").modules, "pynvml_rows_fake", fake.module())
    reading = asyncio.run(NvmlSource("pynvml_rows_fake").read())
    first, second = reading.gpus  # type: ignore[union-attr]
    assert first.processes is not None and first.processes[0].pid == 1
    assert first.processes[0].used_memory_bytes == 2 * GIB and first.processes[0].name  # /proc/1/comm
    assert second.processes is None  # not supported: unknown, not "no processes"
    views = {"local": EndpointGpus("local", NVML_SOURCE, reading.gpus)}  # type: ignore[union-attr]
    assert any("pid 1 " in line.plain for line in screen_lines(views, frozenset(), 100))


@contextlib.asynccontextmanager
async def _replayed(tmp_path: Path, size: tuple[int, int], view: EndpointGpus) -> AsyncIterator[Replayed]:
    """The dashboard of a short recording (it has no GPU readings) after one GPU poll of `view`."""
    app = SpectopApp(
        Settings(), replay_path=write_recording(tmp_path / "r.jsonl"), replay_speed=0.0,
        theme_folders=[themes_dir()], remember_theme_choice=False,
    )  # fmt: skip
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.replay_done)
        app.apply(GpusPolled(1.0, {view.endpoint: view}))
        yield app, pilot


async def test_g_opens_one_row_per_gpu_and_follows_the_polls(tmp_path: Path) -> None:
    view = EndpointGpus("mtp-on", "dcgm", tuple(busy(i) for i in range(8)))
    async with _replayed(tmp_path, (80, 24), view) as (app, pilot):
        await pilot.press("g")
        await wait_for(pilot, lambda: isinstance(app.screen, GpuScreen))
        screen = app.screen
        assert isinstance(screen, GpuScreen)
        text = [line.plain for line in screen.lines()]
        assert sum(line.startswith("GPU") for line in text) == 8
        cooler = (*(busy(i) for i in range(7)), GpuSample(index=7, uuid="GPU-7", power_w=100.0))
        app.apply(GpusPolled(2.0, {"mtp-on": EndpointGpus("mtp-on", "dcgm", cooler)}))
        await pilot.pause()
        assert any(line.startswith("GPU7") and "100 W" in line for line in (c.plain for c in screen.lines()))
        await pilot.press("escape")
        assert not isinstance(app.screen, GpuScreen)


@pytest.mark.parametrize("width", [36, 76, 116])
def test_mig_slices_under_their_gpu_in_whole_parts(width: int) -> None:
    page = (Path(__file__).parent / "samples" / "dcgm_exporter_3.3_h100_mig.prom").read_text()
    lines = [row.plain for row in gpu_rows(parse_dcgm_page(page), width)]
    assert all(len(line) <= width and "…" not in line for line in lines)
    assert [line.split()[0] for line in lines if line.startswith("GPU")] == ["GPU0", "GPU1"]
    slices = [line.strip() for line in lines if line.lstrip().startswith("└")]
    assert [line.split()[2:4] for line in slices] == [
        ["3g.40gb", "#1"], ["2g.20gb", "#5"], ["1g.10gb", "#13"], ["1g.10gb", "#14"]
    ]  # fmt: skip
    assert lines.index(next(line for line in lines if "#14" in line)) < lines.index(
        next(line for line in lines if line.startswith("GPU1"))
    )  # under GPU 0, before GPU 1
    if width >= 76:
        assert "MIG ×4" in lines[0]
        assert "34.7/39.2G" in slices[0] and "88%" in slices[0] and "busy 91%" in slices[0]
        assert "busy 0%" in slices[2]


def _pane_text(app: SpectopApp) -> list[str]:
    pane = app.screen.query_one(GpuRowsPane)
    return str(pane.query_one(Static).render()).splitlines()


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_G_on_the_detail_screen_turns_its_gpu_charts_into_a_row_per_gpu(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    processes = (GpuProcess(4242, "vllm-worker", int(66.2 * GIB)),)
    gpus = (busy(0, processes), *(busy(i, ()) for i in range(1, 8)))
    async with _replayed(tmp_path, size, EndpointGpus("mtp-on", NVML_SOURCE, gpus)) as (app, pilot):
        await app.push_screen(DetailScreen(app.context, "mtp-on"))
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        charts, pane = screen.query_one(GpuCharts), screen.query_one(GpuRowsPane)
        await wait_for(pilot, lambda: charts.display and not pane.display, "the GPU charts")
        assert any(row.keys == ["G"] and row.text == "GPU charts ⇄ rows here" for row in key_rows(screen))

        await pilot.press("G")
        await wait_for(pilot, lambda: pane.display and not charts.display, "the GPU rows")
        await pilot.pause()
        text = _pane_text(app)
        rows = [line for line in text if line.startswith("GPU")]
        assert [row.split()[0] for row in rows] == [f"GPU{i}" for i in range(8)]
        width = size[0] - 4
        assert all(len(line) <= width and "…" not in line for line in text)  # whole parts, none cut
        assert all("68.1/79.6G" in row and "86%" in row and "291 W" in row and "97%" in row for row in rows)
        assert all("power cap, thermal (software)" in row for row in rows)
        assert text[1].split() == ["pid", "4242", "66.2G", "vllm-worker"]  # under its GPU
        assert text[3].strip() == "no processes"
        # At most half the screen, the rest a scroll away (nothing lost): 16 lines, all in sight at 120x36.
        assert pane.virtual_size.height == len(text) == 16
        assert (pane.size.height == len(text)) == (size == (120, 36))

        cooler = (*gpus[:7], GpuSample(index=7, uuid="GPU-7", power_w=100.0))  # the next poll
        app.apply(GpusPolled(2.0, {"mtp-on": EndpointGpus("mtp-on", NVML_SOURCE, cooler)}))

        def cooler_shown() -> bool:
            return any(row.startswith("GPU7 –") and "100 W" in row for row in _pane_text(app))

        await wait_for(pilot, cooler_shown, "the next poll's rows")

        await pilot.press("G")
        await wait_for(pilot, lambda: charts.display and not pane.display, "the GPU charts again")


async def test_the_gpu_rows_of_an_endpoint_without_gpu_data_say_why(tmp_path: Path) -> None:
    gone = EndpointGpus("mtp-off", "", reason="nvidia-ml-py is not installed")
    async with _replayed(tmp_path, (80, 24), gone) as (app, pilot):
        await app.push_screen(DetailScreen(app.context, "mtp-on"))
        await pilot.press("G")
        await wait_for(pilot, lambda: app.screen.query_one(GpuRowsPane).display, "the GPU rows")
        await pilot.pause()
        assert _pane_text(app) == ["– no GPU data in a replay (GPU readings are not recorded)"]
        await app.pop_screen()
        await app.push_screen(DetailScreen(app.context, "mtp-off"))
        await pilot.press("G")
        await wait_for(pilot, lambda: _pane_text(app) == ["– nvidia-ml-py is not installed"], "the reason")


def _eight_on_an_exporter() -> EndpointGpus:
    return EndpointGpus("mtp-on", "http://127.0.0.1:9400/metrics", tuple(busy(i) for i in range(8)))


async def test_eight_gpus_of_an_exporter_are_all_in_sight_at_80x24(tmp_path: Path) -> None:
    async with _replayed(tmp_path, (80, 24), _eight_on_an_exporter()) as (app, pilot):
        await app.push_screen(DetailScreen(app.context, "mtp-on"))
        await pilot.press("G")
        pane = app.screen.query_one(GpuRowsPane)
        await wait_for(pilot, lambda: pane.display and len(_pane_text(app)) == 9, "the GPU rows")
        await pilot.pause()
        assert _pane_text(app)[-1].strip() == "processes: – (dcgm-exporter does not list processes)"
        assert pane.size.height == 9 and pane.max_scroll_y == 0  # the demo's eight GPUs: every row in sight


async def test_a_followed_log_still_shows_its_end_when_the_gpu_rows_take_its_room(tmp_path: Path) -> None:
    async with _replayed(tmp_path, (100, 30), _eight_on_an_exporter()) as (app, pilot):
        await app.push_screen(DetailScreen(app.context, "mtp-on"))
        log = app.screen.query_one(LogPane)
        await wait_for(
            pilot, lambda: log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y, "the log's end"
        )
        before = log.size.height
        await pilot.press("G")
        await wait_for(pilot, lambda: log.size.height < before, "the GPU rows taking the log's room")
        await wait_for(pilot, lambda: log.scroll_y == log.max_scroll_y, "the log's end again")
