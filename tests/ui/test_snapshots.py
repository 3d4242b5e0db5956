"""Snapshots of the dashboard from a deterministic recording (no clocks, no randomness)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_no_cut_figures import settled_replay
from textual.pilot import Pilot
from ui_waiting import card_texts, opened_editor, press_into, wait_for, wait_until_still

from tui.paths import sample_configs_dir
from tui.screens.detail import DetailScreen
from tui.screens.help import HelpScreen
from tui.ui.app import SpectopApp
from tui.ui.editor_app import EditorApp
from tui.widgets.edit_mode import FieldInput
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.endpoint_table import EndpointTable


def test_dashboard_160x48(snap_compare: Any, replay_app: Callable[..., SpectopApp]) -> None:
    assert snap_compare(replay_app(), terminal_size=(160, 48), run_before=settled_replay)


def test_detail_gpu_rows_80x24(snap_compare: Any, replay_app: Callable[..., SpectopApp]) -> None:
    """`G`: the detail screen's GPU section as one row per GPU, NVML's processes under each."""
    from tui.gpu.models import REASON_SW_POWER_CAP, GpuProcess, GpuSample
    from tui.gpu.monitor import NVML_SOURCE, EndpointGpus
    from tui.sources.updates import GpusPolled

    def gpu(index: int, processes: tuple[GpuProcess, ...]) -> GpuSample:
        return GpuSample(
            index=index, uuid=f"GPU-{index}", name="NVIDIA H100 80GB HBM3",
            memory_used_bytes=(60 + index) * 2**30, memory_total_bytes=80 * 2**30, utilization_pct=90.0,
            power_w=600.0 + index, temperature_c=60.0 + index, sm_clock_mhz=1980.0,
            throttle_reasons=REASON_SW_POWER_CAP if index else 0, processes=processes,
        )  # fmt: skip

    async def gpu_rows(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, SpectopApp)
        await settled_replay(pilot)
        worker = (GpuProcess(4242, "vllm-worker", 58 * 2**30),)
        gpus = tuple(gpu(index, worker if index < 2 else ()) for index in range(4))
        app.apply(GpusPolled(1.0, {"mtp-on": EndpointGpus("mtp-on", NVML_SOURCE, gpus)}))
        await app.push_screen(DetailScreen(app.context, "mtp-on"))
        await pilot.press("G")
        await wait_for(pilot, lambda: "GPU3" in str(app.screen.query_one("#gpu-rows-lines").render()))
        await pilot.pause()

    assert snap_compare(replay_app(), terminal_size=(80, 24), run_before=gpu_rows)


each_size = pytest.mark.parametrize(
    "size", [(80, 24), (120, 36), (200, 50)], ids=lambda size: f"{size[0]}x{size[1]}"
)


@each_size
def test_dashboard_cards_at_each_size(
    snap_compare: Any, replay_app: Callable[..., SpectopApp], size: tuple[int, int]
) -> None:
    """Compact at 80x24; with the detail's charts at 120x36 (a grid of two columns) and 200x50 (three)."""

    async def cards(pilot: Pilot[Any]) -> None:
        await settled_replay(pilot)
        charts = size != (80, 24)
        await wait_for(
            pilot, lambda: all(("-5 min" in text) == charts for text in card_texts(pilot.app).values())
        )
        await wait_until_still(pilot)

    assert snap_compare(replay_app(), terminal_size=size, run_before=cards)


@each_size
def test_dashboard_table_at_each_size(
    snap_compare: Any, replay_app: Callable[..., SpectopApp], size: tuple[int, int]
) -> None:
    async def table(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await settled_replay(pilot)
        await pilot.press("v")
        await wait_for(pilot, lambda: app.screen.query_one("#table", EndpointTable).row_count == 3)
        await wait_until_still(pilot)

    assert snap_compare(replay_app(), terminal_size=size, run_before=table)


@each_size
def test_detail_at_each_size(
    snap_compare: Any, replay_app: Callable[..., SpectopApp], size: tuple[int, int]
) -> None:
    async def open_detail(pilot: Pilot[Any]) -> None:
        # the first card is focused after the first refresh, not at once
        app = pilot.app
        await settled_replay(pilot)
        first = "mtp-on"
        await wait_for(pilot, lambda: isinstance(app.focused, EndpointCard) and app.focused.endpoint == first)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.endpoint == first)
        await wait_until_still(pilot)

    assert snap_compare(replay_app(), terminal_size=size, run_before=open_detail)


@each_size
def test_help_at_each_size(
    snap_compare: Any, replay_app: Callable[..., SpectopApp], size: tuple[int, int]
) -> None:
    async def open_help(pilot: Pilot[Any]) -> None:
        await settled_replay(pilot)
        await press_into(pilot, HelpScreen, "question_mark")
        await wait_until_still(pilot)

    assert snap_compare(replay_app(), terminal_size=size, run_before=open_help)


@each_size
def test_editor_at_each_size(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.chdir(tmp_path)  # the header names the file as given: the same in every run
    target = Path("config.toml")
    shutil.copy(sample_configs_dir() / "config.toml", target)

    async def loaded(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await opened_editor(pilot)
        await wait_for(pilot, lambda: isinstance(app.focused, FieldInput), "the first field's focus")
        await pilot.pause()

    assert snap_compare(EditorApp(target), terminal_size=size, run_before=loaded)
