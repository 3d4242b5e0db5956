# ruff: noqa: E501  (real log lines)
"""llama.cpp stamps lines with the time since start, not a wall time: `spectop logs` gives
that stamp apart as `uptime`, and `time` is the wall time only when it is known."""

from __future__ import annotations

import json
import queue
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.telemetry.test_logs_command import Spawned
from tui.cli import main
from tui.telemetry.logs import LogParser

ACCEPTANCE = "6.16.143.218 I slot print_timing: id  0 | task 2 | draft acceptance = 0.57576 (   19 accepted /    33 generated), mean len =  2.10\n"
OOM = "6.16.150.001 E llama_init_from_model: failed to allocate buffer: cudaMalloc failed: out of memory\n"


def test_spectop_logs_gives_the_uptime_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "llama.log"
    log.write_text(ACCEPTANCE)
    assert main(["logs", str(log), "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record["kind"] == "spec_decode"
    assert record["time"] is None  # a log read after the fact: the wall time is unknown
    assert record["uptime"] == "6.16.143.218"
    assert main(["logs", str(log)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("– ")  # the time column: unknown, not the uptime
    assert "(up 6.16.143.218)" in line and "accept 58%" in line


def test_errors_carry_the_uptime_too() -> None:
    (event,) = LogParser().feed(OOM)
    assert event.kind == "error" and event.time is None and event.uptime == "6.16.150.001"


def test_a_wrappers_wall_time_is_the_event_time() -> None:
    wrapped = "2026-07-20T09:50:00.123456789Z stderr F " + ACCEPTANCE
    (event,) = LogParser().feed(wrapped)
    assert event.time == "2026-07-20T09:50:00.123456789Z"
    assert event.uptime == "6.16.143.218"


def test_a_line_followed_live_gets_the_wall_time_it_was_read_at(tmp_path: Path) -> None:
    log = tmp_path / "llama.log"
    log.write_text("0.00.001.682 I srv  llama_server: initializing ...\n")
    spawned = Spawned(str(log), "--follow", "--json")
    try:
        before = datetime.now().astimezone()
        for _ in range(60):  # the follower starts at the end of the file: append until it sees a line
            with open(log, "a") as handle:
                handle.write(ACCEPTANCE)
            try:
                record = json.loads(spawned._lines.get(timeout=0.5))
                break
            except queue.Empty:
                continue
        else:
            raise AssertionError("spectop logs --follow printed nothing")
        time.sleep(0.01)
        after = datetime.now().astimezone()
    finally:
        returncode, _ = spawned.interrupt()
    assert returncode == 0
    assert record["uptime"] == "6.16.143.218"
    assert isinstance(record["time"], str)
    read_at = datetime.fromisoformat(record["time"])
    assert before.replace(microsecond=0) <= read_at <= after
