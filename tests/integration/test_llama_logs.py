"""`spectop logs FILE --json` turns a real llama-server log into the right `spec_decode` events."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest
from llama_server import LlamaServer
from llama_spectop import json_lines, run_spectop, start_spectop
from llama_workload import (
    acceptance_lines,
    log_size,
    run_requests,
    verification_steps,
    wait_for_finished_requests,
)

pytestmark = pytest.mark.llamacpp

REQUESTS = 3


@pytest.mark.parametrize("kind", ["same", "noisy", "random"])
def test_logs_gives_one_spec_decode_event_per_finished_request(
    llama_servers: dict[str, LlamaServer], kind: str, tmp_path: Path
) -> None:
    server = llama_servers[kind]
    offset = log_size(server.log_file)
    run_requests(server.url, REQUESTS)
    wait_for_finished_requests(server.log_file, offset, REQUESTS)
    log_copy = tmp_path / "server.log"
    log_copy.write_bytes(server.log_file.read_bytes())  # a stable file: the server keeps writing its own
    assert verification_steps(log_copy), "no LLAMA_TRACE step lines: the log would not test the skip"

    done = run_spectop(["logs", str(log_copy), "--json"], tmp_path, 60)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    spec = [event for event in events if event["kind"] == "spec_decode"]
    truth = acceptance_lines(log_copy)
    assert len(truth) >= REQUESTS
    # One event per `draft acceptance` line, in order; the per-step trace lines make none.
    assert len(spec) == len(truth)
    for event, line in zip(spec, truth, strict=True):
        assert event["accepted_tokens"] == line.accepted
        assert event["drafted_tokens"] == line.generated
        assert event["acceptance_rate"] == pytest.approx(line.rate, abs=1e-5)
        assert event["acceptance_rate"] == pytest.approx(line.accepted / line.generated, abs=1e-5)
        assert event["mean_acceptance_length"] == pytest.approx(line.mean_length)
        # llama.cpp prints only its time since start: that is `uptime`; a file read after the fact has no
        # wall time, so `time` stays unknown rather than showing the uptime stamp as a time.
        assert event["uptime"], event
        assert event["time"] is None, event
    assert not [event for event in events if event["kind"] == "error"], "a healthy server logged no errors"


def test_logs_of_the_no_draft_server_has_no_spec_decode_events(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    server = llama_servers["nodraft"]
    offset = log_size(server.log_file)
    run_requests(server.url, 2)
    wait_for_finished_requests(server.log_file, offset, 2)
    done = run_spectop(["logs", str(server.log_file), "--json"], tmp_path, 60)
    assert done.returncode == 0, done.stderr
    kinds = {event["kind"] for event in json_lines(done.stdout)}
    assert "spec_decode" not in kinds
    assert "error" not in kinds


def test_logs_follow_sees_requests_as_the_server_finishes_them(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    server = llama_servers["noisy"]
    offset = log_size(server.log_file)
    run_requests(server.url, 1)  # at least one event already in the file
    wait_for_finished_requests(server.log_file, offset, 1)
    existing = len(acceptance_lines(server.log_file))
    process = start_spectop(["logs", str(server.log_file), "--follow", "--from-start", "--json"], tmp_path)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()], daemon=True)
    reader.start()
    events: list[dict[str, object]] = []

    def read_events_until(count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while len(events) < count and time.monotonic() < deadline:
            try:
                event = json.loads(lines.get(timeout=0.5))
            except queue.Empty:
                continue
            if event["kind"] == "spec_decode":
                events.append(event)

    try:
        read_events_until(existing, 60)
        assert len(events) == existing, "the existing lines were not read"
        offset = log_size(server.log_file)
        run_requests(server.url, REQUESTS)  # only now: these lines are followed, not read at start
        wait_for_finished_requests(server.log_file, offset, REQUESTS)
        truth = acceptance_lines(server.log_file)
        read_events_until(len(truth), 30)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        reader.join(timeout=10)
    assert len(truth) == existing + REQUESTS
    assert [(e["accepted_tokens"], e["drafted_tokens"]) for e in events] == [
        (line.accepted, line.generated) for line in truth
    ]
