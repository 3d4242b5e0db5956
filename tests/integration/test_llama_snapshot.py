"""`spectop snapshot` on real llama-servers agrees with the servers' own record (log lines, `timings`), also
while a second scraper resets a gauge, and sees a restarted server again. llama.cpp counts a request on
/metrics when it finishes, so the requests run between spectop's first two scrapes, which a tap shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from llama_server import LlamaServer
from llama_spectop import json_lines, run_spectop, spectop_running
from llama_workload import (
    acceptance_lines,
    log_size,
    run_requests,
    timings_totals,
    verification_steps,
    wait_for_finished_requests,
)
from vllm_workload import RecordingTap, steady_load

pytestmark = pytest.mark.llamacpp

KINDS = ("nodraft", "same", "noisy", "random")
WINDOW_S = 20.0
REQUESTS = 4
MAX_TOKENS = 64
DRAFT_N_MAX = 8


def _snapshot_around_workload(
    servers: dict[str, LlamaServer],
    home: Path,
    window_s: float = WINDOW_S,
    requests: int = REQUESTS,
    max_tokens: int = MAX_TOKENS,
) -> tuple[
    dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]], dict[str, int], dict[str, RecordingTap]
]:
    taps = {kind: RecordingTap(servers[kind].url) for kind in servers}
    with ExitStack() as stack:
        for tap in taps.values():
            stack.enter_context(tap)
        offsets = {kind: log_size(servers[kind].log_file) for kind in servers}
        urls = [f"{taps[kind].url}/metrics" for kind in servers]
        with spectop_running(["snapshot", *urls, "--json", "--window", str(window_s)], home) as process:
            for kind, tap in taps.items():
                # The first GET tells spectop it is llama.cpp; /slots and a second GET make the window's first
                # reading (so a token decoded between /metrics and /slots is never taken from the window).
                assert tap.wait_for_metrics_scrapes(2, timeout_s=60), f"spectop never scraped {kind}"
            with ThreadPoolExecutor(max_workers=len(servers)) as pool:
                futures = {
                    kind: pool.submit(run_requests, servers[kind].url, requests, max_tokens)
                    for kind in servers
                }
                responses = {kind: future.result(timeout=window_s) for kind, future in futures.items()}
            for kind in servers:
                wait_for_finished_requests(servers[kind].log_file, offsets[kind], requests)
            finished_at = time.monotonic()
            stdout, stderr = process.communicate(timeout=window_s + 60)
    assert process.returncode == 0, stderr
    for kind, tap in taps.items():
        scrapes = tap.metrics_scrapes()
        assert len(scrapes) == 3, (kind, scrapes)
        assert scrapes[2] > finished_at, f"{kind}: the workload outlasted the {window_s} s window"
    records = {record["url"]: record for record in json_lines(stdout)}
    by_kind = {kind: records[f"{taps[kind].url}/metrics"] for kind in servers}
    return by_kind, responses, offsets, taps


def test_snapshot_figures_agree_with_log_lines_and_timings(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    records, responses, offsets, taps = _snapshot_around_workload(llama_servers, tmp_path)

    for kind in KINDS:
        record, server = records[kind], llama_servers[kind]
        assert record["up"] is True and record["backend"] == "llamacpp", record
        assert record["window_s"] == WINDOW_S
        assert record["model"], record
        tokens = sum(response["usage"]["completion_tokens"] for response in responses[kind])
        assert tokens == REQUESTS * MAX_TOKENS  # random weights never sample EOS: requests run to length
        _, first, second = taps[kind].metrics_scrapes()
        assert record["generation_tokens_per_s"] == pytest.approx(tokens / (second - first), rel=0.05)

        if kind == "nodraft":
            for name in ("acceptance_rate", "mean_acceptance_length", "per_position_acceptance"):
                assert record[name] is None, (name, record[name])  # unknown, never 0
            assert acceptance_lines(server.log_file, offsets[kind]) == []
            continue

        lines = acceptance_lines(server.log_file, offsets[kind])
        steps = verification_steps(server.log_file, offsets[kind])
        assert len(lines) == REQUESTS, kind
        accepted = sum(line.accepted for line in lines)
        drafted = sum(line.generated for line in lines)
        # The log, the trace steps and the responses' timings tell the same story.
        assert (accepted, drafted) == timings_totals(responses[kind])
        assert (accepted, drafted) == (sum(s.accepted for s in steps), sum(s.drafted for s in steps))
        for line in lines:
            task_steps = [step for step in steps if step.task == line.task]
            expected_mean = 1 + line.accepted / len(task_steps)
            assert line.mean_length == pytest.approx(expected_mean, abs=0.005), (kind, line)

        assert record["acceptance_rate"] == pytest.approx(accepted / drafted, abs=1e-9), kind
        assert record["mean_acceptance_length"] == pytest.approx(1 + accepted / len(steps), abs=1e-9), kind
        per_position = record["per_position_acceptance"]
        assert per_position is not None and len(per_position) == DRAFT_N_MAX, kind
        expected_positions = [
            sum(1 for step in steps if step.accepted > i) / len(steps) for i in range(DRAFT_N_MAX)
        ]
        assert per_position == pytest.approx(expected_positions, abs=1e-9), kind

    assert records["same"]["acceptance_rate"] == 1.0
    same_lines = acceptance_lines(llama_servers["same"].log_file, offsets["same"])
    assert all(line.mean_length == 9.0 for line in same_lines)
    assert records["same"]["mean_acceptance_length"] == pytest.approx(9.0)
    assert records["random"]["acceptance_rate"] < 0.05
    assert 0.05 < records["noisy"]["acceptance_rate"] < 0.95


def test_snapshot_of_an_idle_server_reports_unknown_acceptance_not_zero(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    done = run_spectop(["snapshot", llama_servers["same"].url, "--json", "--window", "1"], tmp_path, 60)
    assert done.returncode == 0, done.stderr
    [record] = json_lines(done.stdout)
    assert record["up"] is True and record["backend"] == "llamacpp"
    assert record["acceptance_rate"] is None
    assert record["mean_acceptance_length"] is None


def test_snapshot_table_fits_80_columns_and_shows_acceptance(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    server = llama_servers["noisy"]
    with spectop_running(["snapshot", server.url, "--window", "8"], tmp_path) as process:
        time.sleep(2.0)  # past the first scrape (a slow start only shortens the traffic inside the window)
        run_requests(server.url, 2)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    lines = stdout.splitlines()
    assert lines and all(len(line) <= 80 for line in lines), stdout
    # llama.cpp names the model by its -m path (long here): the status comes before it, never cut off.
    assert lines[0].startswith(f"{server.url} · up · llamacpp"), lines[0]
    assert any("acceptance" in line for line in lines), stdout


def test_snapshot_says_a_closed_port_is_down_and_sees_the_restarted_server_again(
    make_server: Callable[[str], LlamaServer], tmp_path: Path
) -> None:
    server = make_server("same")
    server.kill()
    down = run_spectop(["snapshot", server.url, "--json", "--window", "1", "--timeout", "2"], tmp_path, 60)
    assert down.returncode == 1
    [record] = json_lines(down.stdout)
    assert record["up"] is False and record["error"]

    server.start(port=server.port)
    up = run_spectop(["snapshot", server.url, "--json", "--window", "1"], tmp_path, 60)
    assert up.returncode == 0, up.stderr
    [record] = json_lines(up.stdout)
    assert record["up"] is True and record["backend"] == "llamacpp"


def scrape_metrics(url: str, index: int) -> None:
    """Another client GETting /metrics every 50 ms (Prometheus at a short interval, or a second spectop)."""
    httpx.get(f"{url}/metrics", timeout=5.0)
    time.sleep(0.05)


def test_a_second_scraper_never_makes_a_wrong_request_rate_or_tpot(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    """Every GET /metrics resets `predicted_tokens_seconds`: with a second scraper, spectop says the finished
    requests are unknown (None, with the reason), and what it does report matches the server's `timings`."""
    server = llama_servers["noisy"]
    with steady_load([server.url], concurrency=1, send=scrape_metrics) as (other,):
        records, by_kind, _, taps = _snapshot_around_workload({"noisy": server}, tmp_path, 12.0, 5, 48)
    _, first, second = taps["noisy"].metrics_scrapes()
    assert other.sent > 50, "the second scraper hardly ran"
    record, responses = records["noisy"], by_kind["noisy"]
    print({name: record[name] for name in ("requests_per_s", "tpot_mean_s", "notes")})
    assert record["up"] is True and record["backend"] == "llamacpp", record

    seconds = second - first
    tokens = sum(response["usage"]["completion_tokens"] for response in responses)
    assert record["generation_tokens_per_s"] == pytest.approx(tokens / seconds, rel=0.05)
    # Counters are untouched by the other scraper: acceptance is exact.
    accepted, drafted = timings_totals(responses)
    assert record["acceptance_rate"] == pytest.approx(accepted / drafted, abs=1e-9)

    # The request count needs the gauge the other scraper kept resetting: unknown, and said why.
    rate = record["requests_per_s"]
    if rate is not None:  # only if the other scraper happened not to steal any window (never, at 50 ms)
        assert rate == pytest.approx(5 / seconds, rel=0.02), record
    else:
        assert record["notes"].get("requests_per_s"), record["notes"]
    # TPOT: the server's own decode time per token (n − 1 tokens per request), or unknown with the reason
    # when the request count is (never a guess).
    true_tpot = sum(r["timings"]["predicted_ms"] for r in responses) / sum(
        r["timings"]["predicted_n"] - 1 for r in responses
    )
    if record["tpot_mean_s"] is None:
        assert rate is None and "another client" in record["notes"]["tpot_mean_s"], record["notes"]
    else:
        assert record["tpot_mean_s"] * 1000 == pytest.approx(true_tpot, rel=0.01), (record, true_tpot)
