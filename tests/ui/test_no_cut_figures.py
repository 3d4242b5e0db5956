"""A figure, word, footer key or title is shown whole or not at all, on every screen and size."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from bench_fixtures import MTP_OFF, MTP_ON, BenchTestApp, text_of, until
from cut_figures import OneScreenApp, cut_figures
from recording_factory import write_recording
from test_editor import field_input, type_into
from test_format import FIRST_BUCKET_NOTE, LAST_BUCKET_NOTE, bounded_recording
from test_log_viewer import opened, viewer, write_log
from textual.app import App
from ui_waiting import editing, press_into, press_then_pause, wait_for

from tests.fleet.fake_fleet import NOW, ScriptedPoller, fleet_app, fleet_settings, scripted_readings
from tui.bench.results import BurstResult
from tui.gpu.models import REASON_SW_POWER_CAP, GpuSample
from tui.gpu.monitor import EndpointGpus
from tui.paths import sample_configs_dir
from tui.screens.alerts import AlertsScreen
from tui.screens.detail import DetailScreen, GpuScreen
from tui.screens.tune import TuneScreen
from tui.settings import EndpointSettings
from tui.sources.fleet import FleetSource
from tui.sources.updates import GpusPolled
from tui.tune.result import TuneCell, TuneResult, ValueOutcome
from tui.ui.app import SpectopApp
from tui.widgets.fleet_table import FleetTable

SIZES = [(80, 24), (120, 36), (200, 50)]
SIZE_IDS = [f"{w}x{h}" for w, h in SIZES]
GIB = 2**30


def eight_gpus() -> tuple[GpuSample, ...]:
    """A busy 8-GPU node: 291 W each (2330 W summed), 43 °C, power capped."""
    return tuple(
        GpuSample(
            index=i, uuid=f"GPU-{i}", name="NVIDIA H100 80GB HBM3", memory_total_bytes=int(79.6 * GIB),
            memory_used_bytes=int(68.1 * GIB) + i * 2**20, utilization_pct=97.0 - i, power_w=291.25,
            energy_j=1e7, temperature_c=43.0 + i % 2, sm_clock_mhz=1755.0, dram_active=0.6,
            throttle_reasons=REASON_SW_POWER_CAP,
        )
        for i in range(8)
    )  # fmt: skip


async def settled_replay(pilot: Any, *, gpus: bool = False) -> SpectopApp:
    app = pilot.app
    await wait_for(pilot, lambda: app.replay_done)
    if gpus:
        view = EndpointGpus("mtp-on", "http://127.0.0.1:9400/metrics", eight_gpus())
        app.apply(GpusPolled(time=NOW, views={"mtp-on": view}))
    await pilot.pause()
    app.clear_notifications()
    await pilot.pause()
    return app


def assert_whole(
    app: App[Any],
    given: tuple[str, ...] = (),
    whole_or_absent: tuple[str, ...] = (),
    words_whole: tuple[str, ...] = (),
) -> None:
    cuts = cut_figures(app, given, whole_or_absent, words_whole)
    assert not cuts, f"{app.size.width}x{app.size.height}: figures cut:\n" + "\n".join(map(str, cuts))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_dashboard_cards_table_detail_alerts_and_help(
    tmp_path: Path, size: tuple[int, int], replay_app: Callable[..., SpectopApp]
) -> None:
    app = replay_app(replay_path=bounded_recording(tmp_path / "recording.jsonl"))
    async with app.run_test(size=size) as pilot:
        await settled_replay(pilot, gpus=True)
        messages = tuple(alert.message for alert in app.board.alerts.all_alerts())
        assert messages
        assert_whole(app, words_whole=messages)  # a card's alert message in whole words
        await press_then_pause(pilot, "v")  # the table view
        assert_whole(app)
        await press_then_pause(pilot, "v")
        await press_into(pilot, DetailScreen, "enter")
        await pilot.pause()
        notes = tuple(f"TTFT p95: {note}" for note in (FIRST_BUCKET_NOTE, LAST_BUCKET_NOTE))
        assert_whole(app, whole_or_absent=notes)
        await press_then_pause(pilot, "escape")
        await press_into(pilot, AlertsScreen, "a")
        await pilot.pause()
        assert_whole(app, messages)
        await press_then_pause(pilot, "escape")
        await press_then_pause(pilot, "question_mark")
        assert_whole(app)
        await press_then_pause(pilot, "escape")
        await press_into(pilot, GpuScreen, "g")  # one row per GPU
        await pilot.pause()
        assert_whole(app)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_editor_status_line_after_a_save(tmp_path: Path, size: tuple[int, int]) -> None:
    folder = tmp_path / "a-folder-with-a-long-name-as-real-deployments-have" / "vllm-deepseek-v3-mtp"
    folder.mkdir(parents=True)
    target = folder / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    async with editing(target, size=size) as (pilot, screen):
        await type_into(pilot, field_input(screen, "speculative", "num_speculative_tokens"), "3")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: pilot.app.screen is not screen)
        await pilot.press("y")
        await wait_for(
            pilot, lambda: target.with_name("config.toml.bak").exists() and pilot.app.screen is screen
        )
        await pilot.pause()
        assert_whole(pilot.app, ("vllm-deepseek-v3-mtp/config.toml", "previous version:", "config.toml.bak"))


def cancelled_sweep() -> TuneResult:
    """k = 0..4 at concurrency 1, 4 and 16; cancelled after k = 2 (the rest unmeasured)."""
    concurrencies = [1, 4, 16]

    def cell(value: int, concurrency: int) -> TuneCell:
        if value > 2:
            return TuneCell(value=value, concurrency=concurrency, ok=False)
        speedup, drafting = 1.0 + 0.4 * value, value > 0
        return TuneCell(
            value=value, concurrency=concurrency, ok=True, decode_tokens_per_s=812.4 + 101.7 * value,
            speedup=speedup, speedup_ci95=(speedup - 0.1, speedup + 0.1) if drafting else None,
            acceptance_rate=0.71 if drafting else None,
        )  # fmt: skip

    outcomes = [
        ValueOutcome(value=value, started=value <= 2, cells=[cell(value, c) for c in concurrencies])
        for value in range(5)
    ]
    return TuneResult(
        started_at=datetime(2026, 1, 1, tzinfo=UTC), config_file="config.toml", kind="vllm_toml",
        key="speculative.num_speculative_tokens", endpoint="http://127.0.0.1:8000", restart_command=["true"],
        values=list(range(5)), concurrencies=concurrencies, original_value=2, baseline_value=0, requests=8,
        max_tokens=64, prompts="mixed", outcomes=outcomes, best={1: 2, 4: 2, 16: 1}, cancelled=True,
    )  # fmt: skip


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_tune_table_after_a_cancel(config_toml: Path, size: tuple[int, int]) -> None:
    endpoint = EndpointSettings(
        name="tuned", url="http://127.0.0.1:9", config_file=config_toml, restart_command="true"
    )
    screen = TuneScreen(endpoint, on_finished=lambda _result: None)
    app = OneScreenApp(screen)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.screen is screen)
        screen._update(cancelled_sweep())
        await pilot.pause()
        assert_whole(app)


def rounding_fleet() -> SpectopApp:
    """A fleet whose figures sit on the edges of their units: TTFT p95 9.96 ms and 999.6 ms (which round
    to "10 ms" and "1.00 s"), tok/s 442.3 right before them."""
    readings = scripted_readings(12)
    for index, reading in enumerate(readings):
        if reading.up:
            ttft = (0.00996, 0.9996, 0.0999, 9.9996)[index % 4]
            reading.figures = reading.figures.model_copy(
                update={"generation_tokens_per_s": 442.3 + index, "ttft_p95_s": ttft}
            )
    settings = fleet_settings("http://prometheus.test:9090", poll_interval_s=3600.0)
    assert settings.prometheus is not None
    poller = ScriptedPoller(settings.prometheus, readings)
    return fleet_app(settings, FleetSource(settings, poller=poller, clock=lambda: NOW))


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
async def test_fleet_table_figures_on_unit_edges(size: tuple[int, int]) -> None:
    app = rounding_fleet()
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query(FleetTable)) and len(app.readings) == 12)
        table = app.screen.query_one(FleetTable)
        if not table.display:  # 12 instances fit as cards at 200x50; a hidden table is not updated
            await pilot.press("v")
        await wait_for(pilot, lambda: len(table.endpoints) == 12)
        await pilot.pause()
        assert_whole(app)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_bench_after_a_burst(recorded_run: BurstResult, size: tuple[int, int]) -> None:
    app = BenchTestApp([MTP_OFF, MTP_ON])
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+r")
        verdict = lambda: text_of(app.screen, "#verdict")  # noqa: E731
        await until(pilot, lambda: "faster" in verdict() or "slower" in verdict())
        await pilot.pause()
        assert_whole(app)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_log_viewer_status_line(tmp_path: Path, size: tuple[int, int]) -> None:
    app = viewer(write_log(tmp_path / "server.log", lines=3000))
    async with app.run_test(size=size) as pilot:
        await opened(pilot, app)
        await press_then_pause(pilot, "slash", *"needle", "enter")
        assert_whole(app)


async def test_the_detail_title_keeps_whole_parts_at_80x24(
    tmp_path: Path, replay_app: Callable[..., SpectopApp]
) -> None:
    """Names too long for the header keep whole parts (never `· up · wind…`)."""
    recording = write_recording(tmp_path / "recording.jsonl")
    recording.write_text(recording.read_text().replace('"mtp-', '"mtp-node-7-rack-b-'))
    app = replay_app(replay_path=recording)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled_replay(pilot)
        await press_into(pilot, DetailScreen, "enter")
        await pilot.pause()
        assert str(app.screen.sub_title).startswith("mtp-node-7-rack-b-")
        assert_whole(app)
