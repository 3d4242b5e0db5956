"""A llama-server killed in the middle of a burst: spectop reports errors and ends, it does not hang."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from llama_server import LlamaServer
from llama_spectop import json_lines, run_spectop, spectop_running
from llama_workload import EVAL_LINE, log_size, read_log, wait_for_finished_requests

pytestmark = pytest.mark.llamacpp

BURST_REQUESTS = 40
BURST_DEADLINE_S = 120.0  # a hang guard: with every request in flight failing fast, it ends long before


def test_bench_reports_errors_when_the_server_dies_mid_burst(
    make_server: Callable[[str], LlamaServer], tmp_path: Path
) -> None:
    server = make_server("same")
    offset = log_size(server.log_file)
    report = tmp_path / "burst.json"
    args = [
        "bench", "--a", server.url, "--requests", str(BURST_REQUESTS), "--concurrency", "2", "--rounds", "1",
        "--warmup", "0", "--max-tokens", "256", "--temperature", "0", "--timeout", "10", "--no-history",
        "--json", str(report),
    ]  # fmt: skip
    with spectop_running(args, tmp_path) as process:
        started = wait_for_finished_requests(server.log_file, offset, 3, timeout_s=120)
        assert len(EVAL_LINE.findall(started)) >= 3, "the burst never got going"
        server.kill()
        stdout, stderr = process.communicate(timeout=BURST_DEADLINE_S)  # TimeoutExpired: it hung
    assert process.returncode == 1, stdout + stderr  # the burst ran, some requests failed
    summary = json.loads(report.read_text())
    arm = summary["a"]
    finished_on_server = len(EVAL_LINE.findall(read_log(server.log_file, offset)))
    assert arm["requests"] == BURST_REQUESTS
    assert 0 < arm["errors"] < BURST_REQUESTS
    assert arm["requests"] - arm["errors"] <= finished_on_server  # no success the server never finished
    assert set(arm["errors_by_kind"]) <= {"connect", "broken_stream", "timeout", "http_status"}, arm
    assert "connect" in arm["errors_by_kind"] or "broken_stream" in arm["errors_by_kind"], arm


def test_snapshot_sees_a_restarted_server_again(
    make_server: Callable[[str], LlamaServer], tmp_path: Path
) -> None:
    server = make_server("same")
    server.kill()
    down = run_spectop(["snapshot", server.url, "--json", "--window", "1", "--timeout", "2"], tmp_path, 60)
    assert down.returncode == 1
    assert json_lines(down.stdout)[0]["up"] is False

    server.start(port=server.port)
    up = run_spectop(["snapshot", server.url, "--json", "--window", "1"], tmp_path, 60)
    assert up.returncode == 0, up.stderr
    [record] = json_lines(up.stdout)
    assert record["up"] is True and record["backend"] == "llamacpp"
