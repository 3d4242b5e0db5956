"""spectop.toml: validation with specific errors, the lookup order, --endpoint URLs, and fleet mode's
`prometheus` table and flags (with the PromQL selector rule and the queries' shape)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tui.fleet.queries import FLEET_FIGURES, discovery_query, duration, figure_queries, selector
from tui.paths import sample_configs_dir, user_config_dir
from tui.settings import (
    PrometheusSettings,
    Settings,
    SettingsError,
    apply_fleet_flags,
    load_settings,
    parse_settings,
    prometheus_settings,
)
from tui.validators import parse_matchers

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


def test_lookup_order_and_urls_adding_to_an_explicit_file(tmp_path: Path) -> None:
    xdg_file = user_config_dir() / "spectop.toml"
    xdg_file.parent.mkdir(parents=True)
    xdg_file.write_text('[[endpoints]]\nname = "from-xdg"\nurl = "http://x"\n')
    assert [e.name for e in load_settings().endpoints] == ["from-xdg"]
    (tmp_path / "spectop.toml").write_text('[[endpoints]]\nname = "from-cwd"\nurl = "http://x"\n')
    assert [e.name for e in load_settings().endpoints] == ["from-cwd"]
    explicit = tmp_path / "other.toml"
    explicit.write_text('[[endpoints]]\nname = "explicit"\nurl = "http://x"\n')
    assert [e.name for e in load_settings(explicit).endpoints] == ["explicit"]
    assert [e.name for e in load_settings(explicit, ["http://y:1"]).endpoints] == ["explicit", "y:1"]
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "missing.toml")


def test_endpoint_urls_work_without_any_file() -> None:
    settings = load_settings(endpoint_urls=["http://127.0.0.1:8000", "127.0.0.1:30000/metrics/"])
    assert [e.url for e in settings.endpoints] == ["http://127.0.0.1:8000", "http://127.0.0.1:30000"]
    assert settings.endpoints[1].resolved_metrics_url == "http://127.0.0.1:30000/metrics"
    with pytest.raises(SettingsError, match="--endpoint ftp://x"):
        load_settings(endpoint_urls=["ftp://x"])


FILE = """
[prometheus]
url = "prom.internal:9090/"
match = '{job="vllm", env=~"prod.*"}'
bearer_token_env = "PROM_TOKEN"
tls_verify = false
timeout_s = 4
group_by = "model"
"""


def test_the_prometheus_table_is_read() -> None:
    settings = parse_settings(FILE).prometheus
    assert settings is not None
    assert settings.url == "http://prom.internal:9090"
    assert settings.match == 'job="vllm",env=~"prod.*"'
    assert settings.bearer_token_env == "PROM_TOKEN" and settings.tls_verify is False
    assert settings.timeout_s == 4 and settings.group_by == "model"
    assert parse_settings("").prometheus is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[prometheus]\nurl = "http://p:9090"\nmatchh = "x"',
            "field prometheus.matchh: not a known field (did you mean 'match'?)",
        ),
        ('[prometheus]\nurl = "http://p:9090"\nmatch = "up"', "expected label matchers"),
        (
            '[prometheus]\nurl = "http://p:9090"\nbearer_token_env = "eyJhbGciOi.x.y"',
            "NAME of an environment variable",
        ),
        ('[prometheus]\nurl = "http://ops:hunter2@p:9090"', "put no user or password in the URL"),
        ('[prometheus]\nurl = "http://p:9090"\ntimeout_s = 0', "must be greater than 0"),
        ('[prometheus]\nurl = "http://p:9090"\ngroup_by = "a b"', "prometheus.group_by"),
    ],
)
def test_bad_prometheus_tables_are_refused_with_the_field(text: str, expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        parse_settings(text, Path("spectop.toml"))
    assert expected in str(caught.value)
    assert "hunter2" not in str(caught.value)  # a password in a URL is never echoed


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ('{job="vllm"}', 'job="vllm"'),
        ('job="vllm", env=~"prod.*",', 'job="vllm",env=~"prod.*"'),
        ("{ instance!~'10\\\\..*' }", "instance!~'10\\\\..*'"),
        ("{}", ""),
    ],
)
def test_matchers_are_normalised(text: str, normalised: str) -> None:
    assert parse_matchers(text) == normalised


@pytest.mark.parametrize(
    "text",
    [
        'up{job="x"}',
        '{job="x"} or vector(1)',
        '{__name__="vllm:x"}',
        '{job="x" env="y"}',
        "{job=x}",
        '{job="x"}}',
    ],
)
def test_anything_but_label_matchers_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_matchers(text)


def test_selector_adds_the_matchers_to_every_series() -> None:
    assert selector("up", "") == "up"
    assert selector("up", 'job="a"') == 'up{job="a"}'
    assert selector("x", 'job="a"', 'mode="decode"') == 'x{mode="decode",job="a"}'


def test_one_query_per_figure_whatever_the_backends() -> None:
    queries = figure_queries('job="vllm"', 30)
    assert [query.figure for query in queries] == list(FLEET_FIGURES)
    gauges = {"running", "waiting", "kv_cache_usage"}
    for query in queries:
        assert 'job="vllm"' in query.expr and "by (instance" in query.expr  # one series per instance
        assert ("[30s]" in query.expr) == (query.figure not in gauges)
        assert all(f"{backend}:" in query.expr for backend in ("vllm", "llamacpp")) or query.figure in {
            "requests_per_s",
            "ttft_mean_s",
            "ttft_p50_s",
            "ttft_p95_s",
            "e2e_mean_s",
            "per_position_acceptance",
            "tpot_mean_s",  # llama.cpp: unknown without a request count, as when scraped directly
        }
    assert duration(12.5) == "12500ms" and duration(60) == "60s"
    assert "last_over_time" in discovery_query("", ("job",), 60) and "last_over_time" not in discovery_query(
        "", ()
    )


def flags(**values: object) -> argparse.Namespace:
    return argparse.Namespace(**{"prometheus": None, "match": None, "group_by": None, **values})


def test_flags_override_the_file_and_keep_secrets_only_for_the_same_url() -> None:
    base = parse_settings(FILE).prometheus
    same = prometheus_settings(base, "http://prom.internal:9090", '{job="sglang"}', "job")
    assert same is not None and same.bearer_token_env == "PROM_TOKEN" and same.tls_verify is False
    assert same.match == 'job="sglang"' and same.group_by == "job"
    other = prometheus_settings(base, "http://elsewhere:9090")
    assert other is not None and other.bearer_token_env is None and other.url == "http://elsewhere:9090"
    assert other.tls_verify is True  # nothing of the other server's settings
    settings = apply_fleet_flags(Settings(), flags(prometheus="127.0.0.1:9090", group_by="model"))
    assert settings.prometheus == PrometheusSettings(url="http://127.0.0.1:9090", group_by="model")
    assert apply_fleet_flags(Settings(), flags()).prometheus is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"match": '{job="x"}'}, "--match and --group-by need --prometheus URL"),
        ({"prometheus": "ftp://x"}, "--prometheus: expected an http"),
        ({"prometheus": "http://p:9090", "match": "up"}, "--match: expected label matchers"),
    ],
)
def test_bad_flags_name_the_flag(values: dict[str, str], expected: str) -> None:
    with pytest.raises(SettingsError, match=expected.replace("(", r"\(")):
        apply_fleet_flags(Settings(), flags(**values))
