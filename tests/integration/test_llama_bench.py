"""`spectop bench` A/B between the no-draft server and the identical-draft server.

Speculative decoding is lossless, so greedy output must be identical on both arms; the timings spectop
measures on the client side must be consistent with what the servers logged for the same requests.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from llama_server import LlamaServer
from llama_spectop import run_spectop
from llama_workload import log_size, request_timings

pytestmark = pytest.mark.llamacpp

REQUESTS = 6
MAX_TOKENS = 64


def test_bench_ab_no_draft_vs_identical_draft(llama_servers: dict[str, LlamaServer], tmp_path: Path) -> None:
    a, b = llama_servers["nodraft"], llama_servers["same"]
    offsets = {"a": log_size(a.log_file), "b": log_size(b.log_file)}
    report = tmp_path / "burst.json"
    done = run_spectop(
        [
            "bench", "--a", a.url, "--b", b.url, "--requests", str(REQUESTS), "--rounds", "2",
            "--warmup", "1", "--temperature", "0", "--max-tokens", str(MAX_TOKENS),
            "--timeout", "60", "--no-history", "--json", str(report),
        ],
        tmp_path, timeout_s=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(report.read_text())

    equivalence = summary["equivalence"]
    assert equivalence["compared"] >= REQUESTS
    assert equivalence["identical"] == equivalence["compared"], equivalence["divergences"]
    assert equivalence["divergences"] == []

    server_logs = {
        "a": request_timings(a.log_file, offsets["a"]),
        "b": request_timings(b.log_file, offsets["b"]),
    }
    for arm_name in ("a", "b"):
        arm = summary[arm_name]
        assert arm["errors"] == 0 and arm["requests"] >= REQUESTS, arm_name
        details = arm["requests_detail"]
        assert all(request["output_tokens"] == MAX_TOKENS for request in details), arm_name
        assert not arm["usage_estimated"]
        # llama.cpp streams every token as its own chunk, even tokens accepted from a draft.
        assert arm["tokens_per_chunk"] == pytest.approx(1.0, abs=0.25), arm_name

        logged = server_logs[arm_name]
        assert len(logged) >= arm["requests"], arm_name  # every request (and warm-up) finished on the server
        server_prompt_s = statistics.median(t.prompt_ms for t in logged) / 1000
        server_decode = statistics.median(t.eval_tokens_per_s for t in logged)
        ttft_p50, e2e_p50 = arm["ttft_s"]["p50"], arm["e2e_s"]["p50"]
        assert server_prompt_s * 0.5 <= ttft_p50 < 5.0, (arm_name, ttft_p50, server_prompt_s)
        assert ttft_p50 < e2e_p50 < 30.0
        client_decode = arm["decode_tokens_per_s"]["p50"]
        # The client sees the stream a little later than the server computes it, never much faster.
        assert 0.3 * server_decode <= client_decode <= 1.3 * server_decode, (
            arm_name, client_decode, server_decode
        )

    assert summary["a"]["acceptance_rate"] is None  # no drafting: unknown, not 0
    assert summary["b"]["acceptance_rate"] == pytest.approx(1.0)
    assert summary["b"]["mean_acceptance_length"] == pytest.approx(9.0)

    # On 2 CPU cores the identical draft costs as much as the target: B is slower, and the servers agree.
    ratio = summary["comparison"]["decode_tokens_per_s_ratio"]
    server_ratio = statistics.median(t.eval_tokens_per_s for t in server_logs["b"]) / statistics.median(
        t.eval_tokens_per_s for t in server_logs["a"]
    )
    assert server_ratio < 1.0
    assert ratio is not None and ratio < 1.0, summary["comparison"]
    assert summary["comparison"]["verdict"]
