"""`prometheus = {...}` in spectop.toml, `--prometheus/--match/--group-by`, the PromQL selector rule and the
queries' shape."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.cli.conftest import spectop
from tui.fleet.queries import FLEET_FIGURES, discovery_query, duration, figure_queries, selector
from tui.settings import (
    PrometheusSettings,
    Settings,
    SettingsError,
    apply_fleet_flags,
    parse_settings,
    prometheus_settings,
)
from tui.validators import parse_matchers

FILE = """
[prometheus]
url = "prom.internal:9090/"
match = '{job="vllm", env=~"prod.*"}'
bearer_token_env = "PROM_TOKEN"
tls_verify = false
timeout_s = 4
group_by = "model"
"""


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


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


def test_dashboard_with_prometheus_opens_the_fleet_dashboard() -> None:
    result = spectop("--prometheus", "http://127.0.0.1:9")  # no terminal here: it says so, as any dashboard
    assert result.returncode == 2
    assert "terminal" in result.stderr and "coming" not in result.stderr and "not wired" not in result.stderr
    result = spectop("--prometheus", "http://127.0.0.1:9", "--endpoint", "http://127.0.0.1:8000")
    assert result.returncode == 2 and "no --endpoint" in result.stderr
    result = spectop("--match", '{job="x"}')
    assert result.returncode == 2 and "need --prometheus" in result.stderr


def test_snapshot_argument_errors_exit_2() -> None:
    result = spectop("snapshot")
    assert result.returncode == 2 and "at least one URL, or --prometheus URL" in result.stderr
    result = spectop("snapshot", "http://127.0.0.1:9", "--prometheus", "http://127.0.0.1:9")
    assert result.returncode == 2 and "not both" in result.stderr
    result = spectop("snapshot", "--prometheus", "http://127.0.0.1:9", "--match", "up")
    assert result.returncode == 2 and "--match: expected label matchers" in result.stderr


def test_snapshot_with_prometheus_down_exits_1(tmp_path: Path) -> None:
    from tests.fleet.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    (tmp_path / "spectop.toml").write_text(
        f'[prometheus]\nurl = "{url}"\nbearer_token_env = "FLEET_UNSET_TOKEN"\n'
    )
    result = spectop(
        "--config", str(tmp_path / "spectop.toml"), "snapshot", "--prometheus", url, "--timeout", "2"
    )
    assert result.returncode == 1 and "Prometheus unreachable" in result.stderr
    assert "environment variable FLEET_UNSET_TOKEN is not set" in result.stderr
    assert "Traceback" not in result.stderr
