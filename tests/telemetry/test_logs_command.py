# ruff: noqa: E501  (real log lines)
"""`spectop logs FILE [--follow] [--from-start] [--json]` as a user runs it, and its renderings."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import IO

import pytest
from test_logs_dropped_lines import VLLM_SPEC
from test_logs_samples import _events

from tui.cli import main
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import LogParser
from tui.telemetry.logs.render import event_json, event_text

SAMPLES = Path(__file__).parent / "log_samples"
SPEC_LINE = VLLM_SPEC + "\n"


@pytest.mark.parametrize(
    ("name", "said"), [("missing.log", "missing.log does not exist"), ("", "is a directory")]
)
def test_no_log_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, said: str
) -> None:
    assert main(["logs", str(tmp_path / name)]) == 2
    assert said in capsys.readouterr().err


def test_readable_output_of_the_vllm_sample(capsys: pytest.CaptureFixture[str]) -> None:
    main(["logs", str(SAMPLES / "vllm.server.log")])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6
    assert lines[0].startswith("08-20 14:04:17 stats")
    assert "gen 277.9/s" in lines[0] and "kv 1%" in lines[0] and "hit 35%" in lines[0]
    assert lines[1].startswith("08-20 14:04:17 spec") and "accept 71%" in lines[1]
    assert "1629/2296 tok" in lines[1]


def test_json_errors_carry_category_message_line_and_a_null_time_when_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "RuntimeError: Engine core initialization failed. See root cause above.\n"  # no time: null
        "(EngineCore pid=9) ERROR 05-01 14:39:06 [core.py:1131] Traceback (most recent call last):\n"
        '(EngineCore pid=9) ERROR 05-01 14:39:06 [core.py:1131]   File "x.py", line 1, in f\n'
        "(EngineCore pid=9) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory.\n"
    )
    assert main(["logs", str(log), "--json"]) == 0
    unknown, *records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (unknown["kind"], unknown["time"], unknown["category"]) == ("error", None, "engine_dead")
    assert [(r["kind"], r["category"]) for r in records] == [("error", "oom"), ("error", "traceback")]
    assert records[0]["message"] == "torch.OutOfMemoryError: CUDA out of memory."
    assert records[1]["time"] == "05-01 14:39:06"
    assert records[1]["line"].count("\n") == 2


HANG_GUARD_S = 60.0  # a loaded machine is slow, not broken: never an assertion about speed
# ctrl-c in a terminal reaches a foreground process whose SIGINT is the default. A suite started in the
# background of a non-interactive shell (`pytest &`) has SIGINT ignored, which every child inherits and
# Python keeps: `spectop logs` then rightly ignores the test's SIGINT. The child starts as from a terminal.
AS_FROM_A_TERMINAL = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('tui', run_name='__main__', alter_sys=True)"
)


class Spawned:
    """`spectop logs ...` in a subprocess; its stdout and stderr lines are read by threads so waits are
    bounded."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", AS_FROM_A_TERMINAL, "logs", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # faulthandler: a follower that outlives its ctrl-c is sent SIGABRT and prints where it hung
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._errors: queue.Queue[str] = queue.Queue()
        self._pumps = [
            threading.Thread(target=self._pump, args=(stream, lines), daemon=True)
            for stream, lines in ((self.process.stdout, self._lines), (self.process.stderr, self._errors))
        ]
        for pump in self._pumps:
            pump.start()

    @staticmethod
    def _pump(stream: IO[str] | None, lines: queue.Queue[str]) -> None:
        assert stream is not None
        for line in stream:
            lines.put(line)

    def json_line(self) -> dict[str, object]:
        return json.loads(_next(self._lines, "printed"))

    def stderr_line(self) -> str:
        return _next(self._errors, "said")

    def interrupt(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
            self.process.wait()
            for pump in self._pumps:
                pump.join(HANG_GUARD_S)
            stacks = "".join(iter_queue(self._errors))[-6000:]
            raise AssertionError(
                f"spectop logs outlived its ctrl-c by {HANG_GUARD_S:.0f} s:\n{stacks}"
            ) from None
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        for pump in self._pumps:
            pump.join(HANG_GUARD_S)
        return self.process.returncode, "".join(iter_queue(self._errors))


def _next(lines: queue.Queue[str], did: str) -> str:
    try:
        return lines.get(timeout=HANG_GUARD_S)
    except queue.Empty:
        raise AssertionError(f"spectop logs {did} nothing within {HANG_GUARD_S:.0f} s") from None


def iter_queue(lines: queue.Queue[str]) -> list[str]:
    taken = []
    while not lines.empty():
        taken.append(lines.get())
    return taken


def test_follow_prints_new_events_and_ctrl_c_exits_quietly(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(SPEC_LINE)
    spawned = Spawned(str(log), "--follow", "--from-start", "--json")
    try:
        first = spawned.json_line()
        assert first["kind"] == "spec_decode" and first["accepted_tokens"] == 1629
        with open(log, "a") as handle:
            handle.write(SPEC_LINE.replace("Accepted: 1629", "Accepted: 1700"))
        second = spawned.json_line()
        assert second["accepted_tokens"] == 1700
        # a traceback at the end of the log is reported once the log goes quiet
        with open(log, "a") as handle:
            handle.write('Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: boom\n')
        third = spawned.json_line()
        assert third["category"] == "traceback" and third["message"] == "RuntimeError: boom"
    finally:
        returncode, stderr = spawned.interrupt()
    assert returncode == 0
    assert "Traceback" not in stderr


def test_follow_waits_for_a_file_that_does_not_exist_yet(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    spawned = Spawned(str(log), "--follow", "--json")
    try:
        notice = spawned.stderr_line()  # once it is following: no fixed pause before the check
        assert f"waiting for {log} to appear" in notice, notice
        assert spawned.process.poll() is None  # not exit 2: with --follow a missing file is waited for
        log.write_text(SPEC_LINE)  # the file was missing at the start: it is read from its first line
        record = spawned.json_line()
        assert record["kind"] == "spec_decode"
    finally:
        returncode, _ = spawned.interrupt()
    assert returncode == 0


def test_a_reader_that_stops_early_is_not_an_error(tmp_path: Path) -> None:
    # `spectop logs big.log --json | head -1`: the pipe closes under spectop's feet.
    log = tmp_path / "big.log"
    lines = (SAMPLES / "vllm.server.log").read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines * 2000), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", str(log), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert json.loads(process.stdout.readline())["kind"]
    process.stdout.close()
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""


def test_json_line_is_kind_time_and_the_known_fields_and_text_fits_80_columns() -> None:
    oom = ErrorEvent(category="oom", message="torch.OutOfMemoryError: CUDA out of memory." * 5, line="x")
    lifetime = SpecDecodeEvent(per_position_acceptance=[0.5] * 15, scope="lifetime")
    samples = [event for name in ("vllm", "sglang", "llamacpp") for event in _events(name)]
    for event in [*samples, oom, StatsEvent(), lifetime]:
        text = event_json(event)
        assert "\n" not in text
        decoded = json.loads(text)
        exclude = None if isinstance(event, ErrorEvent) else {"line"}
        assert decoded == {"time": None, **event.model_dump(exclude_none=True, exclude=exclude)}
        assert list(decoded)[:2] == ["kind", "time"]
        assert ("line" in decoded) == isinstance(event, ErrorEvent)
        assert len(event_text(event)) <= 80
    assert json.loads(event_json(StatsEvent(running=3))) == {"kind": "stats", "time": None, "running": 3.0}
    assert event_text(StatsEvent(running=3)).startswith("–")  # an unknown time
    assert "ERROR oom: torch.OutOfMemoryError" in event_text(oom)


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


def test_errors_carry_the_uptime_too_and_a_wrappers_wall_time_is_the_event_time() -> None:
    (event,) = LogParser().feed(OOM)
    assert event.kind == "error" and event.time is None and event.uptime == "6.16.150.001"
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
