"""Per-request figures from real llama-servers: spectop's per-request acceptance equals what the server
logged for each request (its `timings`), reconciles with /metrics, and alternating bursts of the same
pair agree with each other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llama_server import LlamaServer
from llama_spectop import run_spectop
from llama_workload import acceptance_lines, log_size, wait_for_finished_requests

pytestmark = pytest.mark.llamacpp

REQUESTS = 6
MAX_TOKENS = 128
STALE_KEEP_ALIVE = ("broken_stream", "RemoteProtocolError: Server disconnected without sending a response.")


def _bench(args: list[str], tmp_path: Path, name: str, warmup: int = 0) -> tuple[dict[str, Any], Any]:
    report = tmp_path / f"{name}.json"
    done = run_spectop(
        [
            "bench", *args, "--warmup", str(warmup), "--temperature", "0", "--max-tokens", str(MAX_TOKENS),
            "--timeout", "60", "--no-history", "--json", str(report),
        ],
        tmp_path,
        timeout_s=300,
    )  # fmt: skip
    assert report.is_file(), done.stdout + done.stderr
    return json.loads(report.read_text(encoding="utf-8")), done


def _ok(arm: dict[str, Any]) -> list[dict[str, Any]]:
    failures = [(r["error_kind"], r["error"]) for r in arm["requests_detail"] if r.get("error_kind")]
    assert all(failure == STALE_KEEP_ALIVE for failure in failures), failures
    return [r for r in arm["requests_detail"] if not r.get("error_kind")]


def test_per_request_acceptance_equals_the_servers_timings(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    server = llama_servers["noisy"]  # acceptance varies from request to request
    offset = log_size(server.log_file)
    summary, done = _bench(
        ["--a", server.url, "--requests", str(REQUESTS), "--concurrency", "1", "--rounds", "1"],
        tmp_path,
        "one",
    )
    requests = _ok(summary["a"])
    assert len(requests) >= REQUESTS - 2, done.stdout + done.stderr
    wait_for_finished_requests(server.log_file, offset, len(requests))
    logged = acceptance_lines(server.log_file, offset)
    # One request at a time: the log's `draft acceptance` lines are the requests in order.
    ordered = sorted(requests, key=lambda r: r["sent_s"])
    ours = [(r["server"]["accepted"], r["server"]["drafted"]) for r in ordered]
    assert ours == [(line.accepted, line.generated) for line in logged], (ours, logged)
    for request in ordered:
        figures = request["server"]
        assert figures["source"] == "llamacpp"
        assert figures["prompt_tokens"] is not None and figures["cached_tokens"] is not None
        assert figures["server_ttft_ms"] is not None and figures["server_ttft_ms"] > 0
    explained = summary["a"]["explain"]
    accepted, drafted = sum(a for a, _ in ours), sum(d for _, d in ours)
    assert explained["acceptance"]["accepted"] == accepted and explained["acceptance"]["drafted"] == drafted
    assert explained["acceptance"]["pooled"] == pytest.approx(accepted / drafted)
    reconciliation = explained["reconciliation"]
    note = summary["a"]["acceptance_note"] or ""
    if len(requests) == REQUESTS and STALE_KEEP_ALIVE[1] not in note:
        # Nothing else ran on this server during the burst: Σ per-request = the /metrics deltas.
        assert reconciliation["exact"], reconciliation


def test_alternating_bursts_of_the_same_pair_agree(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    a, b = llama_servers["nodraft"], llama_servers["same"]
    intervals = []
    for attempt in ("first", "second"):
        summary, done = _bench(
            ["--a", a.url, "--b", b.url, "--requests", "10", "--rounds", "5", "--concurrency", "1"],
            tmp_path,
            attempt,
            warmup=1,  # as a user runs it: a server's first answers after its start are slower
        )
        assert summary["settings"]["schedule"] == "alternate", summary["settings"]
        assert "alternate (default" in (summary["settings"]["schedule_reason"] or "")
        for arm in ("a", "b"):
            _ok(summary[arm])
        ci = summary["comparison"]["ci95"]
        assert ci is not None, done.stdout + done.stderr
        intervals.append(tuple(ci))
    (low1, high1), (low2, high2) = intervals
    assert max(low1, low2) <= min(high1, high2), intervals  # the two intervals overlap
