"""`spectop logs` on a real vLLM's log (`Engine 000:`, `SpecDecoding metrics:` and access lines) against
the server's own counters; the requests run between two idle `Engine 000:` lines, so the lines in between
cover exactly the counters' increase.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from llama_spectop import json_lines, run_spectop
from llama_workload import log_size, read_log
from vllm_server import VllmServer
from vllm_workload import completion, delta, prompt, read_page, wait_for_idle_line, wait_until_quiet

from tui.telemetry.logs.display import display_line

REQUESTS = 8
MAX_TOKENS = 48


def test_logs_spec_lines_equal_the_counters_over_the_same_interval(
    vllm_servers: dict[str, VllmServer], tmp_path: Path
) -> None:
    server = vllm_servers["noisy"]
    start = wait_until_quiet(server.log_file, server.url)
    before = read_page(server.url)
    for index in range(REQUESTS):
        completion(server.url, prompt(index), MAX_TOKENS)
    after = read_page(server.url)
    end = wait_for_idle_line(server.log_file, log_size(server.log_file))
    excerpt = tmp_path / "server.log"
    excerpt.write_text(read_log(server.log_file, start)[: end - start], encoding="utf-8")

    done = run_spectop(["logs", str(excerpt), "--json"], tmp_path, timeout_s=600)
    assert done.returncode == 0, done.stderr
    assert "failed" not in done.stderr and "unread" not in done.stderr, done.stderr
    events = json_lines(done.stdout)
    spec = [event for event in events if event["kind"] == "spec_decode"]
    stats = [event for event in events if event["kind"] == "stats"]
    assert spec and stats
    accepted = delta(before, after, "vllm:spec_decode_num_accepted_tokens_total")
    drafted = delta(before, after, "vllm:spec_decode_num_draft_tokens_total")
    assert sum(event["accepted_tokens"] for event in spec) == accepted
    assert sum(event["drafted_tokens"] for event in spec) == drafted
    for event in spec:
        assert event["backend"] == "vllm" and event["engine"] == "0" and event["scope"] == "interval"
        rate = event["accepted_tokens"] / event["drafted_tokens"]
        assert event["acceptance_rate"] == pytest.approx(rate, abs=5e-4)
        assert len(event["per_position_acceptance"]) == 3
    text = excerpt.read_text()
    engine_lines = [line for line in text.splitlines() if "Engine 000: Avg prompt throughput" in line]
    assert len(stats) == len(engine_lines)
    for event, line in zip(stats, engine_lines, strict=True):
        kv = re.search(r"CPU KV cache usage: ([\d.]+)%", line)
        assert kv is not None, line  # the CPU build's spelling
        assert event["kv_cache_usage"] == pytest.approx(float(kv[1]) / 100), (event, line)
        assert event["engine"] == "0" and "CPU KV cache usage" not in (event.get("extra") or {})
    # Access lines: spectop tells them apart (hidden in the log pane until `h`), one per request sent.
    posts = [line for line in text.splitlines() if '"POST /v1/completions HTTP/1.1" 200' in line]
    assert len(posts) == REQUESTS
    assert all(display_line(line).access for line in posts)
    assert not any(display_line(line).access for line in engine_lines)
