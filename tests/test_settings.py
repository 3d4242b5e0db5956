"""spectop.toml: validation with specific errors, the lookup order, and --endpoint URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.paths import sample_configs_dir, user_config_dir
from tui.settings import (
    SettingsError,
    endpoint_from_url,
    load_settings,
    parse_settings,
)

GOOD = """
poll_interval_s = 1.5
[alerts]
acceptance_warning = 0.5
[[endpoints]]
name = "gpu1"
url = "http://10.0.0.1:8000/"
log_file = "logs/vllm.log"
config_file = "config.toml"
api_key_env = "GPU1_KEY"
restart_command = "systemctl restart 'vllm server'"
"""


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_the_shipped_sample_is_valid() -> None:
    path = sample_configs_dir() / "spectop.toml"
    settings = parse_settings(path.read_text(encoding="utf-8"), path)
    assert [e.name for e in settings.endpoints] == ["mtp-on", "mtp-off"]
    assert settings.alerts.acceptance_warning == 0.6 and settings.alerts.acceptance_critical == 0.3
    assert settings.endpoints[0].config_file == (path.parent / "config.toml").resolve()


def test_fields_defaults_and_relative_paths(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "spectop.toml"
    settings = parse_settings(GOOD, path)
    endpoint = settings.endpoints[0]
    assert settings.poll_interval_s == 1.5 and settings.window_s == 60.0
    assert endpoint.url == "http://10.0.0.1:8000"
    assert endpoint.resolved_metrics_url == "http://10.0.0.1:8000/metrics"
    assert endpoint.backend == "auto"
    assert endpoint.log_file == (tmp_path / "conf" / "logs" / "vllm.log").resolve()
    assert endpoint.restart_command == ["systemctl", "restart", "vllm server"]  # split, never a shell


def test_api_key_comes_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = parse_settings(GOOD).endpoints[0]
    monkeypatch.delenv("GPU1_KEY", raising=False)
    assert endpoint.api_key() is None
    monkeypatch.setenv("GPU1_KEY", "sk-secret")
    assert endpoint.api_key() == "sk-secret"
    assert "sk-secret" not in endpoint.model_dump_json()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[[endpoints]]\nname = "a"\nurl = "ftp://host"\n', "endpoint 'a', field url: expected an http"),
        ('[[endpoints]]\nname = "a"\nurl = "http://x"\napi_key_env = "sk-12-ab"\n', "field api_key_env"),
        ('[[endpoints]]\nname = "a"\nurl = "http://x"\nbackend = "tgi"\n', "endpoint 'a', field backend"),
        ('[[endpoints]]\nurl = "http://x"\n', "endpoint #1, field name: required, but not given"),
        ("poll_interval_s = -1\n", "field poll_interval_s: must be greater than 0"),
        ("[alerts]\nacceptance_warning = 0.2\n", "acceptance_critical must not be above"),
        ('[[endpoints]]\nname="a"\nurl="http://x"\n[[endpoints]]\nname="a"\nurl="http://y"\n', "used twice"),
        ("pol_interval = 3\n", r"field pol_interval: not a known field \(did you mean 'poll_interval_s'\?\)"),
        ("[alerts]\nsustained = 3\n", r"alerts.sustained: not a known field \(did you mean 'sustained_s'"),
        ("poll_interval_s = \n", "not valid TOML"),
    ],
)
def test_errors_name_the_file_the_endpoint_and_the_field(text: str, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "spectop.toml"
    with pytest.raises(SettingsError, match=expected) as error:
        parse_settings(text, path)
    assert str(error.value).startswith(str(path))


def test_messages_are_in_spectops_words_without_validator_prefixes(tmp_path: Path) -> None:
    text = (
        '[[endpoints]]\nname = "a"\nurl = "http://x"\nacceptance_threshold = 2\n'
        "[alerts]\nacceptance_warning = 0.2\n"
    )
    with pytest.raises(SettingsError) as error:
        parse_settings(text, tmp_path / "s.toml")
    message = str(error.value)
    assert "must be at most 1" in message
    for prefix in ("Value error", "Input should", "Extra inputs", "Field required"):
        assert prefix not in message


def test_a_url_without_scheme_gets_http_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "spectop.toml"
    settings = parse_settings('[[endpoints]]\nname = "a"\nurl = "localhost:8000/"\n', path)
    assert settings.endpoints[0].url == "http://localhost:8000"
    assert settings.notes == [
        f"{path}: endpoint 'a': url 'localhost:8000/' has no scheme; using http://localhost:8000"
    ]
    from_flag = load_settings(endpoint_urls=["localhost:8000"])
    assert from_flag.endpoints[0].url == "http://localhost:8000"
    assert from_flag.notes == ["--endpoint localhost:8000: no scheme given; using http://localhost:8000"]
    assert parse_settings('[[endpoints]]\nname = "a"\nurl = "https://h"\n', path).notes == []


def test_lookup_order(tmp_path: Path) -> None:
    xdg_file = user_config_dir() / "spectop.toml"
    xdg_file.parent.mkdir(parents=True)
    xdg_file.write_text('[[endpoints]]\nname = "from-xdg"\nurl = "http://x"\n')
    assert [e.name for e in load_settings().endpoints] == ["from-xdg"]
    (tmp_path / "spectop.toml").write_text('[[endpoints]]\nname = "from-cwd"\nurl = "http://x"\n')
    assert [e.name for e in load_settings().endpoints] == ["from-cwd"]
    explicit = tmp_path / "other.toml"
    explicit.write_text('[[endpoints]]\nname = "explicit"\nurl = "http://x"\n')
    assert [e.name for e in load_settings(explicit).endpoints] == ["explicit"]
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "missing.toml")


def test_endpoint_urls_work_without_any_file() -> None:
    settings = load_settings(endpoint_urls=["http://127.0.0.1:8000", "127.0.0.1:30000/metrics"])
    assert [e.url for e in settings.endpoints] == ["http://127.0.0.1:8000", "http://127.0.0.1:30000"]
    assert settings.endpoints[1].resolved_metrics_url == "http://127.0.0.1:30000/metrics"
    with pytest.raises(SettingsError, match="--endpoint ftp://x"):
        load_settings(endpoint_urls=["ftp://x"])


def test_endpoint_urls_add_to_an_explicit_file(tmp_path: Path) -> None:
    explicit = tmp_path / "s.toml"
    explicit.write_text('[[endpoints]]\nname = "gpu1"\nurl = "http://x"\n')
    settings = load_settings(explicit, ["http://y:1"])
    assert [e.name for e in settings.endpoints] == ["gpu1", "y:1"]


def test_metrics_url_given_as_the_endpoint() -> None:
    endpoint = endpoint_from_url("http://h:9000/metrics/")
    assert (endpoint.url, endpoint.resolved_metrics_url) == ("http://h:9000", "http://h:9000/metrics")


def test_the_dashboard_refuses_a_bad_settings_file_with_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text('[[endpoints]]\nname = "gpu1"\nurl = "ftp://gpu1:8000"\n')
    result = subprocess.run(
        [sys.executable, "-m", "tui", "--config", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert f"{bad}: endpoint 'gpu1', field url: expected an http:// or https:// URL" in result.stderr
