"""Every file spectop reads says what is wrong in spectop's words, never pydantic's ("Input should be …")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.bench.client_settings import ClientSettingsError, parse_client_settings
from tui.sim.config import SimConfigError, load_sim_config
from tui.ui.themes import load_theme_file

PYDANTIC_WORDS = ("Value error", "Input should", "Extra inputs", "Field required")


def _in_spectops_words(message: str, expected: str) -> None:
    assert expected in message, message
    assert not any(words in message for words in PYDANTIC_WORDS), message


def test_client_settings() -> None:
    with pytest.raises(ClientSettingsError) as error:
        parse_client_settings('{"base_url": "http://127.0.0.1:9/v1", "timeout": -1}', "s.json")
    _in_spectops_words(str(error.value), "s.json: field timeout: must be greater than 0")


def test_sim_config(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[model]\nname = "m"\n[sim]\nspeed = -1\n', encoding="utf-8")
    with pytest.raises(SimConfigError) as error:
        load_sim_config(path)
    _in_spectops_words(str(error.value), "field 'speed': must be greater than 0")


def test_theme_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nprimary = "#123456"\ndark = "yes please"\n', encoding="utf-8")
    with pytest.raises(ValueError) as error:
        load_theme_file(path)
    _in_spectops_words(str(error.value), "field dark: expected true or false")
