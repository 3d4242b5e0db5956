"""Nothing from a server, a log, a config file, a kept burst or Prometheus reaches stdout or stderr raw:
every command, run against real local servers and files, prints hostile text made harmless (escaped in
JSON, not lost), through one choke point (`tui.safe_output`)."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Spectop
from tests.fleet.fake_prometheus import FakePrometheus
from tests.tune.conftest import TuneSim, spectop_process, tune_sim  # noqa: F401 (a fixture)
from tests.tune.test_sweep import tune_args
from tests.untrusted import (
    HOSTILE,
    RAW_CONTROLS,
    Reply,
    ReplyServer,
    assert_no_raw_controls,
    hostile_burst,
    hostile_config,
    hostile_fleet,
    hostile_log,
    hostile_page,
    sample_body,
)
from tui.bench.burst_store import save_burst
from tui.cli import main
from tui.safe_output import SafeStream, progress_line, sanitized_stdio
from tui.telemetry.recording import RecordingError, parse_record

ROOT = Path(__file__).resolve().parents[2]
JSON_OR_TEXT = pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])


# --- the choke point ------------------------------------------------------------------------------------


def test_a_safe_stream_sanitizes_writes_and_passes_spectops_own_controls() -> None:
    inner = io.StringIO()
    stream = SafeStream(inner)
    print(f"model {HOSTILE}", file=stream)  # type: ignore[arg-type]
    progress_line(f"step {HOSTILE}", stream)
    assert_no_raw_controls(inner.getvalue().replace("\r\x1b[K", ""))
    assert inner.getvalue().count("\r\x1b[K") == 1  # the progress line's own erase
    assert "model evil" in inner.getvalue() and "step evil" in inner.getvalue()


def test_main_wraps_stdout_and_stderr_and_restores_them(capsys: pytest.CaptureFixture[str]) -> None:
    before = sys.stdout, sys.stderr
    assert main(["logs", f"/nonexistent/{HOSTILE}.log"]) == 2
    assert (sys.stdout, sys.stderr) == before
    captured = capsys.readouterr()
    assert_no_raw_controls(captured.out + captured.err)
    assert "evil" in captured.err and "does not exist" in captured.err
    with sanitized_stdio():
        assert isinstance(sys.stdout, SafeStream) and isinstance(sys.stderr, SafeStream)


def test_argparse_errors_echo_arguments_safely(run_spectop: Spectop) -> None:
    code, out, err = run_spectop("config", f"x{HOSTILE}", "file.toml")
    assert code == 2 and "invalid choice" in err
    assert_no_raw_controls(out + err)


# --- spectop snapshot: a server's /metrics page, Prometheus's labels and errors ---------------------------


@JSON_OR_TEXT
async def test_snapshot_prints_no_control_sequence(run_spectop: Spectop, json_flag: list[str]) -> None:
    replies = [Reply(hostile_page("metrics_t0.txt")), Reply(hostile_page("metrics_t1.txt"))]
    async with ReplyServer(replies) as server:
        code, out, err = await asyncio.to_thread(
            run_spectop, "snapshot", server.url, "--window", "0.2", *json_flag
        )
    assert code == 0, err
    assert_no_raw_controls(out)
    if json_flag:
        assert json.loads(out)["model"] == HOSTILE  # escaped, not lost
    else:
        assert "evil" in out


async def test_snapshot_notes_quoting_a_hostile_series(run_spectop: Spectop) -> None:
    # A page with the same series twice is inconsistent; its note names the series, labels and all.
    hostile = f'model_name="{HOSTILE}"'.encode()
    page = sample_body("vllm", "metrics_t1.txt").replace(b'model_name="mimo-7b"', hostile)
    first = sample_body("vllm", "metrics_t0.txt")
    async with ReplyServer([Reply(first), Reply(page + page)]) as server:
        code, out, err = await asyncio.to_thread(run_spectop, "snapshot", server.url, "--window", "0.2")
    assert code == 1, err
    assert "inconsistent page" in out and "evil" in out
    assert_no_raw_controls(out + err)


@JSON_OR_TEXT
async def test_snapshot_of_a_fleet_prints_no_control_sequence(
    run_spectop: Spectop, json_flag: list[str]
) -> None:
    fleet = hostile_fleet(4)
    async with FakePrometheus(fleet.answer) as prometheus:
        code, out, err = await asyncio.to_thread(
            run_spectop, "snapshot", "--prometheus", prometheus.url, "--timeout", "5", *json_flag
        )
    assert code == 1, err  # the fleet's last instance is down
    assert_no_raw_controls(out + err)
    if json_flag:
        lines = [json.loads(line) for line in out.splitlines()]
        assert {line["url"] for line in lines} >= {fleet.members[0].name}  # escaped, not lost
        assert {line["model"] for line in lines} >= {fleet.members[1].model}
    else:
        assert "10.1.0.1evil" in out and "qwenevil" in out


async def test_a_failing_prometheus_error_is_printed_without_control_sequences(run_spectop: Spectop) -> None:
    fleet = hostile_fleet(4)
    fleet.failing = (422, {"status": "error", "errorType": f"bad{HOSTILE}", "error": f"no {HOSTILE}"}, 0.0)
    async with FakePrometheus(fleet.answer) as prometheus:
        code, out, err = await asyncio.to_thread(
            run_spectop, "snapshot", "--prometheus", prometheus.url, "--timeout", "5"
        )
    assert code == 1
    assert "error (badevil" in err and "Traceback" not in err
    assert_no_raw_controls(out + err)


# --- spectop logs and replay: a log file, its name, a file that is not a recording -------------------------


@JSON_OR_TEXT
def test_logs_prints_no_control_sequence(run_spectop: Spectop, tmp_path: Path, json_flag: list[str]) -> None:
    log = hostile_log(tmp_path / "server.log")
    code, out, err = run_spectop("logs", str(log), *json_flag)
    assert code == 0, err
    assert_no_raw_controls(out)
    if json_flag:
        (record,) = [json.loads(line) for line in out.splitlines()]
        assert record["category"] == "oom" and "evil\x9b31m\u202e" in record["message"]
        assert "PWNED" not in record["message"]  # the OSC went with the colour codes when the line was read
    else:
        assert "ERROR oom" in out and "evil" in out


async def test_logs_follow_waiting_for_a_hostile_file_name(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tui", "logs", "--follow", str(tmp_path / f"x{HOSTILE}.log"),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    try:
        line = (await asyncio.wait_for(process.stderr.readline(), timeout=60)).decode()
    finally:
        process.terminate()
        await process.wait()
    assert "waiting for" in line and "evil" in line
    assert_no_raw_controls(line)


@pytest.mark.parametrize(
    "record", [{"kind": HOSTILE}, {"kind": "reading", "time": HOSTILE}], ids=["tag", "value"]
)
def test_not_a_recording_is_said_without_control_sequences(
    run_spectop: Spectop, tmp_path: Path, record: dict
) -> None:
    """The reason may quote the file (a JSON tag, a field name)."""
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")  # valid JSON: ESC spelled \u001b
    with pytest.raises(RecordingError):
        parse_record(path.read_text(encoding="utf-8"), path, 1)
    code, out, err = run_spectop("replay", str(path))
    assert code == 2 and "not a spectop recording" in err and "Traceback" not in err
    assert_no_raw_controls(out + err)


# --- spectop config and tune --apply: a config file's text -----------------------------------------------


@pytest.mark.parametrize(
    "action",
    [["show"], ["get", "model.name"], ["lint"], ["lint", "--json"], ["launch"]],
    ids=lambda action: "-".join(action),
)  # fmt: skip
def test_config_prints_no_control_sequence(run_spectop: Spectop, tmp_path: Path, action: list[str]) -> None:
    config = hostile_config(tmp_path / "config.toml")
    code, out, err = run_spectop("config", action[0], str(config), *action[1:])
    assert code in (0, 1), err
    assert_no_raw_controls(out + err)
    assert "evil" in out or "\\u001b" in out


def test_the_applied_diff_is_printed_without_raw_controls(tune_sim: TuneSim, tmp_path: Path) -> None:  # noqa: F811
    """TOML allows C1 controls (the 8-bit CSI U+009B) and bidi overrides in comments, so a valid config file
    can carry them on the very line the tune changes. Against a real simulator, restarted through the demo's
    control socket (tests/tune/conftest.py's `tune_sim`)."""
    hostile_comment = "# draft\x9b2J\u202e tokens per step"
    text = tune_sim.config.read_text(encoding="utf-8")
    text = text.replace(
        "num_speculative_tokens = 2   # draft tokens per step",
        f"num_speculative_tokens = 4   {hostile_comment}",
    )
    # Drafts 1-2 nearly always accepted, 3-4 nearly never: k=2 is ~40% faster than both k=4 and off, not the
    # shared model's 24% and 10%, which 6 requests on a busy host do not always tell. --apply writes k=2.
    text = text.replace("[0.8, 0.7, 0.6, 0.5,", "[0.95, 0.9, 0.05, 0.05,")
    tune_sim.config.write_text(text, encoding="utf-8")
    out = tmp_path / "tune.json"
    flags = ("--values", "0,2", "--concurrency", "1", "--requests", "6", "--apply", "--json", str(out))
    process = spectop_process(*tune_args(tune_sim, *flags))
    stdout, stderr = process.communicate(timeout=180)
    assert process.returncode == 0, stderr
    assert json.loads(out.read_text(encoding="utf-8"))["applied"]["value"] == 2, stdout
    assert "+num_speculative_tokens = 2   # draft" in stdout  # the diff is shown, made harmless
    for raw in RAW_CONTROLS:
        assert raw not in stdout + stderr, (raw, stdout)
    assert hostile_comment in tune_sim.config.read_text(encoding="utf-8")  # the file keeps its bytes


# --- spectop bench: kept burst files ----------------------------------------------------------------------


def test_bench_compare_prints_no_control_sequence(run_spectop: Spectop, tmp_path: Path) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(hostile_burst().model_dump_json())
    after.write_text(hostile_burst(replies=("Bx",)).model_dump_json())
    code, out, err = run_spectop("bench", "--compare", str(before), str(after))
    assert code == 0, err
    assert "first divergence in p0evil" in out
    assert_no_raw_controls(out + err)


def test_bench_compare_error_prints_no_control_sequence(run_spectop: Spectop, tmp_path: Path) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(hostile_burst(f"one{HOSTILE}").model_dump_json())
    after.write_text(hostile_burst("two").model_dump_json())
    code, out, err = run_spectop("bench", "--compare", str(before), str(after))
    assert code != 0 and "different prompt sets (oneevil" in err
    assert_no_raw_controls(out + err)


def test_bench_history_command_with_a_hostile_endpoint_url(
    run_spectop: Spectop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))  # the burst history, the test's own
    burst = hostile_burst()
    for arm in burst.arms:
        arm.url = f"http://e{HOSTILE}x:8000/v1"
    save_burst(burst)
    code, out, err = run_spectop("bench", "--history")
    assert code == 0, err
    assert "eevil" in out
    assert_no_raw_controls(out + err)
