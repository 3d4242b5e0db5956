"""Shared helpers for the dashboard tests: a deterministic recording and an app that replays it."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from bench_fixtures import mtp_burst, replaying
from recording_factory import write_recording
from textual.pilot import Pilot
from ui_waiting import Replayed, spectop, wait_for

from tui.bench.results import BurstResult
from tui.paths import sample_configs_dir, themes_dir
from tui.settings import EndpointSettings, Settings
from tui.ui.app import SpectopApp


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    return write_recording(tmp_path / "recording.jsonl")


@pytest.fixture
def replay_app(recording: Path) -> Callable[..., SpectopApp]:
    def make(**kwargs: Any) -> SpectopApp:
        options = {"replay_path": recording, "replay_speed": 0.0, "theme_folders": [themes_dir()]}
        return SpectopApp(Settings(), **{**options, "remember_theme_choice": False, **kwargs})

    return make


@pytest.fixture
def replayed(replay_app: Callable[..., SpectopApp]) -> Replayed:
    """`async with replayed(size, **options) as (pilot, app)`: the replay app, once it has read it all."""

    @asynccontextmanager
    async def run(
        size: tuple[int, int] = (80, 24), **options: Any
    ) -> AsyncIterator[tuple[Pilot[Any], SpectopApp]]:
        app = replay_app(**options)
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.replay_done, "the end of the replay")
            yield pilot, app

    return run


@pytest.fixture
def bench_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The burst history (tests/conftest.py) and the export files in the test's own folders (the cwd)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def recorded_run(bench_folders: Path, monkeypatch: pytest.MonkeyPatch) -> BurstResult:
    """ctrl+r runs the real session on a recorded A/B burst (A = MTP off, B = MTP on): nothing is sent,
    the figures and dates are fixed, the burst is kept in the history like a live one."""
    result = mtp_burst()
    monkeypatch.setattr("tui.bench.session.run_burst", replaying(result))
    return result


@pytest.fixture
def config_toml(tmp_path: Path) -> Path:
    """A copy of the sample config in the test's folder."""
    target = tmp_path / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    return target


@pytest.fixture
def live_app(config_toml: Path) -> SpectopApp:
    """The dashboard on one endpoint where nothing listens, with the sample config as its file."""
    nowhere = "http://127.0.0.1:9"  # nothing listens
    return spectop(EndpointSettings(name="e", url=nowhere, config_file=config_toml, restart_command=["true"]))
