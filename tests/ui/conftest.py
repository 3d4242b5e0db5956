"""Shared helpers for the dashboard tests: a deterministic recording and an app that replays it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from recording_factory import write_recording

from tui.app import SpectopApp
from tui.paths import themes_dir
from tui.settings import Settings


@pytest.fixture(autouse=True)
def _private_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read or write the real ~/.config/spectop from a test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    return write_recording(tmp_path / "recording.jsonl")


@pytest.fixture
def replay_app(recording: Path) -> Callable[..., SpectopApp]:
    def make(**kwargs: object) -> SpectopApp:
        options: dict[str, object] = {
            "replay_path": recording,
            "replay_speed": 0.0,
            "theme_folders": [themes_dir()],
            "remember_theme_choice": False,
        }
        options.update(kwargs)
        return SpectopApp(Settings(), **options)  # type: ignore[arg-type]

    return make
