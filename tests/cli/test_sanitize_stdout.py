"""The CLI's one choke point: every write to stdout / stderr of every command goes through the sanitizer
(`tui.safe_output`), so a place that forgot `safe_line` cannot leak an escape (issue 20: file names in
`spectop logs`, notes in `spectop snapshot`, argparse errors echoing an argument)."""

from __future__ import annotations

import asyncio
import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "telemetry"))

from metrics_test_server import Reply, ReplyServer, sample_body
from test_snapshot_cli import ROOT, spectop

from tests.cli.test_sanitize_cli import assert_no_raw_controls
from tests.test_sanitize import HOSTILE
from tui.safe_output import SafeStream, progress_line, sanitized_stdio


def test_a_safe_stream_sanitizes_writes_and_passes_spectops_own_controls() -> None:
    inner = io.StringIO()
    stream = SafeStream(inner)
    print(f"model {HOSTILE}", file=stream)  # type: ignore[arg-type]
    progress_line(f"step {HOSTILE}", stream)
    assert_no_raw_controls(inner.getvalue().replace("\r\x1b[K", ""))
    assert inner.getvalue().count("\r\x1b[K") == 1  # the progress line's own erase
    assert "model evil" in inner.getvalue() and "step evil" in inner.getvalue()


def test_main_wraps_stdout_and_stderr_and_restores_them(capsys: pytest.CaptureFixture[str]) -> None:
    from tui.cli import main

    before = sys.stdout, sys.stderr
    assert main(["logs", f"/nonexistent/{HOSTILE}.log"]) == 2
    assert (sys.stdout, sys.stderr) == before
    captured = capsys.readouterr()
    assert_no_raw_controls(captured.out + captured.err)
    assert "evil" in captured.err and "does not exist" in captured.err
    with sanitized_stdio():
        assert isinstance(sys.stdout, SafeStream) and isinstance(sys.stderr, SafeStream)


async def test_logs_file_name_that_does_not_exist(tmp_path: Path) -> None:
    code, out, err = await spectop("logs", str(tmp_path / f"x{HOSTILE}.log"))
    assert code == 2 and "does not exist" in err
    assert_no_raw_controls(out + err)


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


async def test_argparse_errors_echo_arguments_safely() -> None:
    code, out, err = await spectop("config", f"x{HOSTILE}", "file.toml")
    assert code == 2 and "invalid choice" in err
    assert_no_raw_controls(out + err)


async def test_snapshot_notes_quoting_a_hostile_series() -> None:
    # A page with the same series twice is inconsistent; its note names the series, labels and all.
    hostile = f'model_name="{HOSTILE}"'.encode()
    page = sample_body("vllm", "metrics_t1.txt").replace(b'model_name="mimo-7b"', hostile)
    first = sample_body("vllm", "metrics_t0.txt")
    async with ReplyServer([Reply(first), Reply(page + page)]) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "0.2")
    assert code == 1, err
    assert "inconsistent page" in out and "evil" in out
    assert_no_raw_controls(out + err)
