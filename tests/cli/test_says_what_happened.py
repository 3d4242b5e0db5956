"""The command line says what happened in words: the command a mistyped option belongs to and the option
meant, a dry run that wrote nothing, a file that is not a log, what a TOML file is missing and where, and
the lint findings a `config set` causes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Spectop
from tests.fleet.conftest import free_port
from tui.cli import main
from tui.commands.snapshot import _Result, _table
from tui.configs.document import TomlDocument, load_document
from tui.configs.errors import ConfigSyntaxError
from tui.screens.tune import screen_words
from tui.tune.plan import TunePlanError, check_values, default_key
from tui.validators import normalize_http_url


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["snapshot", "--windw", "3"], "--windw (did you mean --window?)"),
        (
            ["config", "set", "config.toml", "model.max_model_len", "4096", "--dryrun"],
            "--dryrun (did you mean --dry-run?)",
        ),
    ],
)
def test_a_mistyped_option_shows_its_commands_usage_and_the_option_meant(
    run_spectop: Spectop, argv: list[str], meant: str
) -> None:
    """Said by the innermost command: `spectop config set`, not `spectop config` or `spectop`."""
    shown = run_spectop(*argv)
    command = " ".join(argv[: 2 if argv[0] == "config" else 1])
    assert shown.returncode == 2
    assert shown.stderr.startswith(f"usage: spectop {command} ")
    assert f"spectop {command}: error: unrecognized arguments: {meant}" in shown.stderr


def test_an_error_in_the_dashboards_options_shows_the_whole_usage(run_spectop: Spectop) -> None:
    shown = run_spectop("--endpoint")
    assert shown.returncode == 2
    assert shown.stderr.startswith("usage: spectop ")
    assert "COMMAND ..." in shown.stderr
    assert "spectop: error: argument --endpoint: expected one argument" in shown.stderr


def test_a_dry_run_says_nothing_was_written(run_spectop: Spectop, config: Path) -> None:
    before = config.read_bytes()
    shown = run_spectop("config", "set", str(config), "model.max_model_len", "4096", "--dry-run")
    assert shown.returncode == 0
    assert "+max_model_len = 4096" in shown.stdout
    assert f"dry run: nothing was written to {config}" in shown.stderr
    assert config.read_bytes() == before
    written = run_spectop("config", "set", str(config), "model.max_model_len", "4096")
    assert "dry run" not in written.stderr + written.stdout


def test_set_shows_the_lint_findings_its_change_causes_and_only_those(
    run_spectop: Spectop, config: Path
) -> None:
    shown = run_spectop("config", "set", str(config), "model.gpu_memory_utilization", "0.95")
    assert shown.returncode == 0
    assert "warning [gpu-memory-high-with-spec] model.gpu_memory_utilization" in shown.stderr
    assert "fix: try 0.85" in shown.stderr
    assert "mtp-layer-reuse" not in shown.stderr  # the file had that one before
    again = run_spectop("config", "set", str(config), "model.gpu_memory_utilization", "0.96")
    assert "gpu-memory-high-with-spec" not in again.stderr  # not new: the file had it


def test_logs_of_a_binary_file_is_refused(run_spectop: Spectop, tmp_path: Path) -> None:
    binary = tmp_path / "server.log"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))
    shown = run_spectop("logs", str(binary))
    assert shown.returncode == 2
    assert f"{binary} is not a text log: it holds binary data (a NUL byte at offset 7)" in shown.stderr
    # the NULs `copytruncate` can leave at a log's start do not make it binary
    holed = tmp_path / "truncated.log"
    holed.write_bytes(b"\x00" * 100 + b"INFO 12-05 07:00:00 [loggers.py:123] started\n")
    assert run_spectop("logs", str(holed)).returncode == 0


@pytest.mark.parametrize(
    ("text", "line", "column", "reason"),
    [
        ("[model]\nname = 'x'\n[speculative\n", 3, 13, "missing ']' to close the table header [speculative"),
        ("[[servers\n", 1, 10, "missing ']]' to close the array-of-tables header [[servers"),
        ("a = [1, 2\nb = 3\n", 1, 5, "missing ']' to close the array opened here"),
        ("a = {b = 1\n", 1, 5, "missing '}' to close the inline table opened here"),
        ('name = "x\n', 1, 10, "missing the closing quote: the string runs to the end of the line"),
        ("a =\n", 1, 4, "missing the value after '='"),
        ('a = "[" # [\nb = [1, # ]\n', 2, 5, "missing ']' to close the array opened here"),
    ],
)
def test_a_toml_syntax_error_says_what_is_missing_and_where(
    text: str, line: int, column: int, reason: str
) -> None:
    with pytest.raises(ConfigSyntaxError) as raised:
        TomlDocument(text)
    assert (raised.value.reason, raised.value.line, raised.value.column) == (reason, line, column)


def test_config_names_the_file_line_and_column_of_a_missing_bracket(
    run_spectop: Spectop, config: Path
) -> None:
    config.write_text(config.read_text().replace("[speculative]", "[speculative"), encoding="utf-8")
    shown = run_spectop("config", "get", str(config), "model.name")
    assert shown.returncode == 1
    assert "Unexpected character" not in shown.stderr
    assert f"{config}: line " in shown.stderr
    assert ": missing ']' to close the table header [speculative" in shown.stderr


# --- settings and fleet flags: said before anything starts, exit 2 (1: Prometheus down) ---------------------


def test_the_dashboard_refuses_a_bad_settings_file_with_exit_2(run_spectop: Spectop, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[endpoints]]\nname = "gpu1"\nurl = "ftp://gpu1:8000"\n')
    result = run_spectop("--config", str(bad))
    assert result.returncode == 2
    assert f"{bad}: endpoint 'gpu1', field url: expected an http:// or https:// URL" in result.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--prometheus", "http://127.0.0.1:9"], "needs a terminal"),  # the fleet dashboard, as any dashboard
        (["--prometheus", "http://127.0.0.1:9", "--endpoint", "http://127.0.0.1:8000"], "no --endpoint"),
        (["--match", '{job="x"}'], "need --prometheus"),
        (["snapshot"], "at least one URL, or --prometheus URL"),
        (["snapshot", "http://127.0.0.1:9", "--prometheus", "http://127.0.0.1:9"], "not both"),
        (
            ["snapshot", "--prometheus", "http://127.0.0.1:9", "--match", "up"],
            "--match: expected label matchers",
        ),
    ],
)
def test_fleet_flags_that_cannot_go_together_exit_2(run_spectop: Spectop, argv: list[str], said: str) -> None:
    shown = run_spectop(*argv)
    assert shown.returncode == 2 and said in shown.stderr


def test_snapshot_with_prometheus_down_exits_1(run_spectop: Spectop, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    settings = tmp_path / "spectop.toml"
    settings.write_text(f'[prometheus]\nurl = "{url}"\nbearer_token_env = "FLEET_UNSET_TOKEN"\n')
    result = run_spectop("--config", str(settings), "snapshot", "--prometheus", url, "--timeout", "2")
    assert result.returncode == 1 and "Prometheus unreachable" in result.stderr
    assert "environment variable FLEET_UNSET_TOKEN is not set" in result.stderr
    assert "Traceback" not in result.stderr


# --- small things the command line and the screens say ------------------------------------------------------


def test_a_multi_line_error_is_printed_as_lines() -> None:
    result = _Result("http://127.0.0.1:9/metrics", 1.0)
    result.error = "HTTP 500\nTraceback (most recent call last):\n  RuntimeError: boom"
    lines = _table(result)
    assert not any("␊" in line for line in lines)
    assert lines[1] == "  error: HTTP 500" and lines[-1].strip() == "RuntimeError: boom"


def test_replay_of_dev_null_is_not_a_recording(run_spectop: Spectop) -> None:
    shown = run_spectop("replay", "/dev/null")
    assert shown.returncode == 2
    assert "is not a spectop recording" in shown.stderr and "no such file" not in shown.stderr
    assert "no such file" in run_spectop("replay", "/nonexistent/recording.jsonl").stderr


def test_snapshot_json_echoes_the_normalised_url(run_spectop: Spectop) -> None:
    shown = run_spectop("snapshot", "127.0.0.1:9", "--json", "--window", "0.1", "--timeout", "1")
    record = json.loads(shown.stdout.splitlines()[0])
    assert record["url"] == "http://127.0.0.1:9"  # as spectop read it, not as typed
    assert "using http://127.0.0.1:9" in shown.stderr


def test_the_tune_screen_names_its_fields_not_the_flags(tmp_path: Path) -> None:
    text = "[speculative]\nenabled = true\nnum_speculative_tokens = 2\n"
    doc = load_document(text, "vllm_toml", tmp_path / "c.toml")
    try:
        check_values(default_key(doc), [0, 32])
    except TunePlanError as error:
        said = screen_words(str(error))
    assert said.startswith("values: ") and "--" not in said
    assert "--" not in screen_words("--apply-at 4: not one of --concurrency")


# --- spectop edit --health-url: the one URL rule, in its words ----------------------------------------------


@pytest.mark.parametrize("url", ["http://", "ftp://127.0.0.1:8000/health", "http://127.0.0.1:8000/he alth"])
def test_a_bad_health_url_is_refused_in_the_url_rules_words(
    url: str, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError) as expected:
        normalize_http_url(url)
    assert main(["edit", str(config), "--health-url", url]) == 2
    assert f"spectop edit: --health-url: {expected.value}" in capsys.readouterr().err


def test_a_health_url_without_scheme_is_taken_as_http_and_said(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Then the editor needs a terminal, which a test has not: the URL was accepted before that.
    assert main(["edit", str(config), "--health-url", "127.0.0.1:8000/health"]) == 2
    err = capsys.readouterr().err
    assert "--health-url: no scheme given; using http://127.0.0.1:8000/health" in err
    assert "needs a terminal" in err
