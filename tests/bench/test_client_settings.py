"""The client settings.json model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.bench.client_settings import ClientSettingsError, load_client_settings, parse_client_settings
from tui.paths import sample_configs_dir


def test_sample_client_settings_and_defaults() -> None:
    settings = load_client_settings(sample_configs_dir() / "client_settings.json")
    assert settings.api_key_env == "SPECTOP_API_KEY"
    assert settings.timeout == 120 and settings.max_retries == 2
    assert settings.extra_body == {"top_p": 0.95, "repetition_penalty": 1.05}
    settings = parse_client_settings('{"base_url": "http://h:8000/v1", "temperature": 0.7}')
    assert settings.temperature == 0.7  # what the file leaves out: the defaults
    assert (settings.timeout, settings.max_retries) == (120.0, 2)
    assert (settings.max_tokens, settings.stream) == (512, True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"base_url": "http://h:8000/v1", "max_retries": 50}', "field max_retries"),
        ('{"base_url": "http://h:8000/v1", "api_key_env": "sk-abc123-xyz"}', "NAME of an environment"),
        ('{"base_url": "localhost:8000"}', "field base_url"),
        ('{"base_url": "http://h:8000/v1", "timeot": 5}', "field timeot: not a client setting"),
        ('{"timeout": 5}', "field base_url"),
        ('{\n  "a": ,\n}', "line 2"),
        ("[]", "JSON object"),
    ],
)
def test_bad_settings_name_the_field(text: str, expected: str) -> None:
    with pytest.raises(ClientSettingsError, match=expected):
        parse_client_settings(text, "s.json")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ClientSettingsError, match="cannot read"):
        load_client_settings(tmp_path / "nope.json")
