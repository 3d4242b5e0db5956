"""`spectop logs FILE --json` turns a real llama-server log into the right `spec_decode` events."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from llama_server import LlamaServer
from llama_spectop import json_lines, run_spectop, spectop_running
from llama_workload import (
    acceptance_lines,
    log_size,
    run_requests,
    verification_steps,
    wait_for_finished_requests,
    wait_until,
)

pytestmark = pytest.mark.llamacpp

REQUESTS = 3


@pytest.mark.parametrize("kind", ["nodraft", "same", "noisy", "random"])
def test_logs_gives_one_spec_decode_event_per_finished_request(
    llama_servers: dict[str, LlamaServer], kind: str, tmp_path: Path
) -> None:
    server = llama_servers[kind]
    offset = log_size(server.log_file)
    run_requests(server.url, REQUESTS)
    wait_for_finished_requests(server.log_file, offset, REQUESTS)
    log_copy = tmp_path / "server.log"
    log_copy.write_bytes(server.log_file.read_bytes())  # a stable file: the server keeps writing its own

    done = run_spectop(["logs", str(log_copy), "--json"], tmp_path, 60)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    assert not [event for event in events if event["kind"] == "error"], "a healthy server logged no errors"
    spec = [event for event in events if event["kind"] == "spec_decode"]
    truth = acceptance_lines(log_copy)
    if kind == "nodraft":
        assert spec == [] and truth == []
        return
    assert verification_steps(log_copy), "no LLAMA_TRACE step lines: the log would not test the skip"
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


def test_logs_follow_sees_requests_as_the_server_finishes_them(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    server = llama_servers["noisy"]
    offset = log_size(server.log_file)
    run_requests(server.url, 1)  # at least one event already in the file
    wait_for_finished_requests(server.log_file, offset, 1)
    existing = len(acceptance_lines(server.log_file))
    events: list[dict[str, Any]] = []
    args = ["logs", str(server.log_file), "--follow", "--from-start", "--json"]
    with spectop_running(args, tmp_path) as process:

        def read() -> None:
            for line in process.stdout or ():
                if (event := json.loads(line))["kind"] == "spec_decode":
                    events.append(event)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        wait_until(lambda: len(events) >= existing, 60)
        assert len(events) == existing, "the existing lines were not read"
        offset = log_size(server.log_file)
        run_requests(server.url, REQUESTS)  # only now: these lines are followed, not read at start
        wait_for_finished_requests(server.log_file, offset, REQUESTS)
        truth = acceptance_lines(server.log_file)
        wait_until(lambda: len(events) >= len(truth), 30)
        process.terminate()
        reader.join(timeout=10)  # at the end of the output: the only reader of the pipe
    assert len(truth) == existing + REQUESTS
    assert [(e["accepted_tokens"], e["drafted_tokens"]) for e in events] == [
        (line.accepted, line.generated) for line in truth
    ]
