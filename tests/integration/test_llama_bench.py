"""`spectop bench` on real llama-servers: an A/B between the no-draft and the identical-draft server (greedy
output identical on both arms, client-side timings consistent with the servers' logs: medians, a loaded
client may read a stream at once), per-request acceptance equal to the server's own, and a server killed
mid-burst reported as errors, not a hang.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llama_server import LlamaServer
from llama_spectop import bench_json, spectop_running
from llama_workload import (
    EVAL_LINE,
    STALE_KEEP_ALIVE,
    acceptance_lines,
    answered,
    log_size,
    read_log,
    request_timings,
    verification_steps,
    wait_for_finished_requests,
)

pytestmark = pytest.mark.llamacpp

REQUESTS = 10
# Long enough that a hiccup of the (CPU-starved) client cannot swallow a whole stream.
MAX_TOKENS = 256


def _bench(
    args: list[str], home: Path, name: str, max_tokens: int, warmup: int = 0
) -> tuple[dict[str, Any], Any]:
    options = f"--warmup {warmup} --temperature 0 --max-tokens {max_tokens} --timeout 60"
    return bench_json([*args, *options.split()], home, name)


def test_bench_ab_no_draft_vs_identical_draft(llama_servers: dict[str, LlamaServer], tmp_path: Path) -> None:
    a, b = llama_servers["nodraft"], llama_servers["same"]
    offsets = {"a": log_size(a.log_file), "b": log_size(b.log_file)}
    args = ["--a", a.url, "--b", b.url, "--requests", str(REQUESTS), "--rounds", "2"]
    summary, done = _bench(args, tmp_path, "burst", MAX_TOKENS)
    details = {arm: answered(summary[arm]) for arm in ("a", "b")}
    failures = sum(len(summary[arm]["requests_detail"]) - len(details[arm]) for arm in details)
    # A few stale connections are allowed (llama_workload.STALE_KEEP_ALIVE); any other failure is not.
    assert failures <= 0.25 * 2 * REQUESTS, summary
    assert done.returncode == (1 if failures else 0), done.stdout + done.stderr

    equivalence = summary["equivalence"]
    assert equivalence["compared"] >= REQUESTS - failures
    assert equivalence["identical"] == equivalence["compared"], equivalence["divergences"]
    assert equivalence["divergences"] == []

    server_logs = {
        arm: request_timings(server.log_file, offsets[arm]) for arm, server in (("a", a), ("b", b))
    }
    for arm_name in ("a", "b"):
        arm = summary[arm_name]
        assert arm["requests"] == REQUESTS, arm_name
        assert all(request["output_tokens"] == MAX_TOKENS for request in details[arm_name]), arm_name
        assert not arm["usage_estimated"]
        # llama.cpp streams every token as its own chunk, even tokens accepted from a draft.
        assert arm["tokens_per_chunk"] == pytest.approx(1.0, abs=0.25), arm_name

        logged = server_logs[arm_name]
        assert len(logged) == len(details[arm_name]), arm_name  # every answered request finished there
        server_prompt_s = statistics.median(t.prompt_ms for t in logged) / 1000
        server_decode = statistics.median(t.eval_tokens_per_s for t in logged)
        ttft_p50, e2e_p50 = arm["ttft_s"]["p50"], arm["e2e_s"]["p50"]
        assert server_prompt_s * 0.5 <= ttft_p50 < 5.0, (arm_name, ttft_p50, server_prompt_s)
        assert ttft_p50 < e2e_p50 < 30.0
        client_decode = arm["decode_tokens_per_s"]["p50"]
        # The client sees the stream a little later than the server computes it, never much faster.
        assert 0.3 * server_decode <= client_decode <= 1.5 * server_decode, (
            arm_name,
            client_decode,
            server_decode,
        )

    assert summary["a"]["acceptance_rate"] is None  # no drafting: unknown, not 0
    note = summary["b"]["acceptance_note"] or ""
    if STALE_KEEP_ALIVE[1] not in note:  # the after-burst scrape can meet the same stale connection
        assert summary["b"]["acceptance_rate"] == pytest.approx(1.0), note
        steps = verification_steps(b.log_file, offsets["b"])
        accepted = sum(step.accepted for step in steps)
        assert summary["b"]["mean_acceptance_length"] == pytest.approx(1 + accepted / len(steps))

    # The A/B speed ratio the client measured (medians) matches the one the servers logged. (Whether B is
    # faster depends on the load: batched verification can beat single-token decoding on one thread.)
    server_ratio = statistics.median(t.eval_tokens_per_s for t in server_logs["b"]) / statistics.median(
        t.eval_tokens_per_s for t in server_logs["a"]
    )
    client_ratio = summary["b"]["decode_tokens_per_s"]["p50"] / summary["a"]["decode_tokens_per_s"]["p50"]
    assert server_ratio / 1.6 <= client_ratio <= server_ratio * 1.6, (client_ratio, server_ratio)
    comparison = summary["comparison"]
    assert comparison["decode_tokens_per_s_ratio"] > 0 and comparison["throughput_ratio"] > 0
    low, high = comparison["ci95"]
    assert 0 < low <= high
    assert comparison["verdict"]


def test_per_request_acceptance_equals_the_servers_timings(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    """spectop's per-request acceptance is what the server logged for each request, and reconciles with
    /metrics."""
    server = llama_servers["noisy"]  # acceptance varies from request to request
    offset = log_size(server.log_file)
    args = ["--a", server.url, "--requests", "6", "--concurrency", "1", "--rounds", "1"]
    summary, done = _bench(args, tmp_path, "one", 128)
    requests = answered(summary["a"])
    assert len(requests) >= 4, done.stdout + done.stderr  # at most two met a stale connection
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
    note = summary["a"]["acceptance_note"] or ""
    if len(requests) == 6 and STALE_KEEP_ALIVE[1] not in note:
        # Nothing else ran on this server during the burst: Σ per-request = the /metrics deltas.
        assert explained["reconciliation"]["exact"], explained["reconciliation"]


def test_alternating_bursts_of_the_same_pair_agree(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    a, b = llama_servers["nodraft"], llama_servers["same"]
    intervals = []
    for attempt in ("first", "second"):
        args = ["--a", a.url, "--b", b.url, "--requests", "10", "--rounds", "5", "--concurrency", "1"]
        # warmup=1, as a user runs it: a server's first answers after its start are slower
        summary, done = _bench(args, tmp_path, attempt, 128, warmup=1)
        assert summary["settings"]["schedule"] == "alternate", summary["settings"]
        assert "alternate (default" in (summary["settings"]["schedule_reason"] or "")
        for arm in ("a", "b"):
            answered(summary[arm])
        ci = summary["comparison"]["ci95"]
        assert ci is not None, done.stdout + done.stderr
        intervals.append(tuple(ci))
    (low1, high1), (low2, high2) = intervals
    assert max(low1, low2) <= min(high1, high2), intervals  # the two intervals overlap


def test_bench_reports_errors_when_the_server_dies_mid_burst(
    make_server: Callable[[str], LlamaServer], tmp_path: Path
) -> None:
    server = make_server("same")
    offset = log_size(server.log_file)
    report = tmp_path / "burst.json"
    args = [
        "bench", "--a", server.url, "--requests", "40", "--concurrency", "2", "--rounds", "1",
        "--warmup", "0", "--max-tokens", "256", "--temperature", "0", "--timeout", "10", "--no-history",
        "--json", str(report),
    ]  # fmt: skip
    with spectop_running(args, tmp_path) as process:
        started = wait_for_finished_requests(server.log_file, offset, 3, timeout_s=120)
        assert len(EVAL_LINE.findall(started)) >= 3, "the burst never got going"
        server.kill()
        # A hang guard (TimeoutExpired): with every request in flight failing fast, it ends long before.
        stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stdout + stderr  # the burst ran, some requests failed
    arm = json.loads(report.read_text())["a"]
    finished_on_server = len(EVAL_LINE.findall(read_log(server.log_file, offset)))
    assert arm["requests"] == 40
    assert 0 < arm["errors"] < 40
    assert arm["requests"] - arm["errors"] <= finished_on_server  # no success the server never finished
    assert set(arm["errors_by_kind"]) <= {"connect", "broken_stream", "timeout", "http_status"}, arm
    assert "connect" in arm["errors_by_kind"] or "broken_stream" in arm["errors_by_kind"], arm
