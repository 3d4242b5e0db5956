"""The burst engine: A/B interleaving, rounds, warm-up, load shapes, cancellation, secrets, retries."""

from __future__ import annotations

import asyncio
import csv
import random
import statistics
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from timed_server import Behaviour, TimedServer

from tests.bench.bursts import burst_config
from tui.bench.engine import ArmUnreachable, BurstConfigError, BurstProgress, arrival_offsets, run_burst
from tui.bench.report.export import export
from tui.bench.report.summary import burst_summary
from tui.bench.report.text import render_text, table_rows
from tui.bench.request import RetryBudget
from tui.bench.transport import burst_client

FAST = Behaviour(ttft_s=0.01, interval_s=0.002, chunks=5)


async def test_ab_same_prompts_same_order_interleaved_and_rounds_alternate(client: httpx.AsyncClient) -> None:
    with TimedServer(FAST) as server_a, TimedServer(FAST) as server_b:
        # A warm-up opens the connections, so no connect race decides the send order.
        config = burst_config(server_a.base_url, server_b.base_url, requests=6, rounds=3, warmup=1)
        result = await run_burst(config, client)
    a, b = result.arms
    assert [r.prompt_id for r in a.requests] == [r.prompt_id for r in b.requests]
    assert [r.round for r in a.requests] == [0, 0, 1, 1, 2, 2]
    for first_index, a_first in ((0, True), (2, False), (4, True)):
        a_sent, b_sent = a.requests[first_index].sent_s, b.requests[first_index].sent_s
        assert (a_sent < b_sent) == a_first, f"round of request {first_index}: wrong arm went first"


async def test_warmup_model_sampling_and_progress(client: httpx.AsyncClient) -> None:
    seen: list[BurstProgress] = []
    with TimedServer(FAST) as server:
        config = burst_config(
            server.base_url,
            requests=4,
            warmup=3,
            max_tokens=77,
            temperature=0.5,
            seed=9,
            extra_body={"top_p": 0.9},
        )
        config.a.model = None  # the first model from /v1/models
        result = await run_burst(config, client, on_progress=seen.append)
        records = server.records
    assert len(records) == 7  # warm-up requests are sent but left out
    assert [r.index for r in result.arms[0].requests] == [0, 1, 2, 3]
    assert result.arms[0].model == "timed-model" and {r.body["model"] for r in records} == {"timed-model"}
    body = records[-1].body
    assert body["max_tokens"] == 77 and body["temperature"] == 0.5 and body["seed"] == 9
    assert body["top_p"] == 0.9
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert seen[-1].phase == "done" and seen[-1].done == seen[-1].total == 4
    assert seen[-1].arms[0].ttft_p50_s is not None


def test_arrival_offsets() -> None:
    constant = arrival_offsets(5, 10.0, "constant", random.Random(0))
    assert constant == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    poisson = arrival_offsets(2000, 50.0, "poisson", random.Random(1))
    assert poisson == sorted(poisson)
    assert poisson[-1] / 1999 == pytest.approx(1 / 50, rel=0.1)  # mean gap 1/rate


async def test_open_loop_queueing_shows_as_send_lag_not_ttft(client: httpx.AsyncClient) -> None:
    slow = Behaviour(ttft_s=0.1, interval_s=0.001, chunks=2)
    with TimedServer(slow) as server:
        # 5x faster than the server can take
        config = burst_config(server.base_url, requests=8, rounds=1, rate=50.0, arrival="constant")
        result = await run_burst(config, client)
    requests = result.arms[0].requests
    assert [r.scheduled_s - requests[0].scheduled_s for r in requests] == pytest.approx(
        [i * 0.02 for i in range(8)], abs=0.005
    )
    lag = requests[-1].send_lag_s
    assert lag > 0.5  # waited for the cap: ~7 * (0.1 - 0.02)
    # The queueing is not TTFT: had it leaked in, the last request's TTFT would carry its whole send lag.
    ttfts = [r.ttft_s for r in requests if r.ttft_s is not None]
    assert len(ttfts) == 8 and max(ttfts) - min(ttfts) < lag / 2


async def test_cancel_stops_every_request_at_once_not_at_their_timeout(client: httpx.AsyncClient) -> None:
    stalled = Behaviour(ttft_s=0.0, interval_s=0.0, chunks=10, stall_after_chunks=2)
    progress: list[BurstProgress] = []
    with TimedServer(stalled) as server_a, TimedServer(stalled) as server_b:
        urls = server_a.base_url, server_b.base_url
        config = burst_config(*urls, requests=16, rounds=1, concurrency=8, timeout_s=120.0)
        task = asyncio.create_task(run_burst(config, client, on_progress=progress.append))
        # Concurrency 8: the first eight stall; the other eight would only start once a slot frees.
        while len(server_a.records) + len(server_b.records) < 8:
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Against the stalled streams' own timeout (a ratio, not a wall-clock limit): cancelled.
        assert time.perf_counter() - started < config.timeout_s / 10
    assert progress and progress[-1].phase == "running"


async def test_api_key_from_env_is_sent_and_never_exported(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    secret = "sk-live-DO-NOT-LEAK-0123456789"
    monkeypatch.setenv("SPECTOP_TEST_KEY", secret)
    with TimedServer(FAST) as server:
        config = burst_config(server.base_url, requests=3)
        config.a.api_key_env = "SPECTOP_TEST_KEY"
        config.a.model = None
        result = await run_burst(config, client)
        assert all(r.headers.get("authorization") == f"Bearer {secret}" for r in server.records)
    outputs = [render_text(burst_summary(result)), result.model_dump_json()]
    for kind in ("json", "csv", "markdown"):
        outputs.append(export(result, kind, tmp_path / f"out.{kind}").read_text(encoding="utf-8"))
    assert all(secret not in text for text in outputs)


async def test_missing_key_variable_is_a_config_error(client: httpx.AsyncClient, monkeypatch) -> None:
    monkeypatch.delenv("SPECTOP_NO_SUCH_KEY", raising=False)
    config = burst_config("http://127.0.0.1:9", requests=1)
    config.a.api_key_env = "SPECTOP_NO_SUCH_KEY"
    with pytest.raises(BurstConfigError, match="SPECTOP_NO_SUCH_KEY"):
        await run_burst(config, client)


@pytest.mark.parametrize("sharded", [False, True], ids=["httpx-pool", "sharded-pools"])
async def test_concurrency_above_the_client_pool_is_refused(sharded: bool) -> None:
    small = burst_client(10) if sharded else httpx.AsyncClient(limits=httpx.Limits(max_connections=10))
    async with small:
        config = burst_config("http://127.0.0.1:9", "http://127.0.0.1:9", concurrency=8)
        with pytest.raises(BurstConfigError, match="connection limit"):
            await run_burst(config, small)


async def test_failed_requests_are_counted_by_kind(client: httpx.AsyncClient) -> None:
    with TimedServer(Behaviour(status=500)) as server:
        config = burst_config(server.base_url, requests=4, max_retries=1)
        result = await run_burst(config, client)
        # Every request tried at most twice (max_retries 1), within the arm's retry cap.
        assert len(server.records) == 4 + 4
    summary = burst_summary(result)
    assert summary.a.errors == 4
    assert summary.a.errors_by_kind == {"http_status": 4}
    assert summary.a.retries == 4
    assert summary.a.ttft_s.p50 is None  # unknown stays None, never 0


@pytest.mark.parametrize(
    ("retry_after", "concurrency"),
    [(None, 8), ("0", 1), ("1", 32), ("http-date+1", 32)],
    ids=["no-retry-after", "retry-after-0", "retry-after-1", "retry-after-http-date"],
)
async def test_429_once_per_request_every_request_succeeds(
    client: httpx.AsyncClient, tmp_path: Path, retry_after: str | None, concurrency: int
) -> None:
    limited = replace(FAST, first_attempt_status=429, retry_after=retry_after)
    with TimedServer(limited) as server_a, TimedServer(limited) as server_b:
        # one round: each arm waits out a Retry-After once
        config = burst_config(
            server_a.base_url, server_b.base_url, requests=32, rounds=1, concurrency=concurrency
        )
        result = await run_burst(config, client)
        assert len(server_a.records) == len(server_b.records) == 64  # each request: one 429, one 200
    for arm in result.arms:
        assert len(arm.requests) == 32
        assert all(r.ok and r.attempts == 2 for r in arm.requests), [r.error for r in arm.requests if r.error]
        if retry_after == "1":
            # The wait the server asked for is client-side time (send lag), never server latency.
            assert all(r.send_lag_s >= 1.0 for r in arm.requests)
            # and not in TTFT: with the wait in it, each TTFT would outlast the send lag (compared in one run)
            ttfts = [r.ttft_s for r in arm.requests if r.ttft_s is not None]
            assert len(ttfts) == 32
            assert statistics.median(ttfts) < statistics.median(r.send_lag_s for r in arm.requests) / 2
    summary = burst_summary(result)
    assert summary.b is not None
    assert summary.a.retries == summary.b.retries == 32
    assert summary.a.errors == summary.b.errors == 0
    assert ("retries", "32", "32") in table_rows(summary)  # the rows every format shows
    rows = list(csv.DictReader(export(result, "csv", tmp_path / "r.csv").open(encoding="utf-8")))
    assert [int(row["attempts"]) for row in rows] == [2] * 64


async def test_a_storm_on_one_arm_leaves_the_other_arms_retries(client: httpx.AsyncClient) -> None:
    dead = Behaviour(status=503, retry_after="0")
    limited = replace(FAST, first_attempt_status=429, retry_after="0")
    with TimedServer(dead) as server_a, TimedServer(limited) as server_b:
        result = await run_burst(burst_config(server_a.base_url, server_b.base_url, requests=16), client)
        a_attempts = len(server_a.records)
    a, b = result.arms
    assert all(r.ok for r in b.requests)  # A used up its own cap, not B's
    assert not any(r.ok for r in a.requests)
    cap = RetryBudget.for_requests(16, max_retries=2).remaining
    assert a_attempts == 16 + cap < 16 * 3  # bounded by the arm's cap, below 2 retries for each request
    assert "retry cap" in (a.requests[-1].error or "")


async def test_every_unreachable_arm_is_named_before_anything_is_sent(client: httpx.AsyncClient) -> None:
    with TimedServer(FAST) as gone_a, TimedServer(FAST) as gone_b:
        a_url, b_url = gone_a.base_url, gone_b.base_url
    config = burst_config(a_url, b_url)
    config.b.name = "mtp-on"  # type: ignore[union-attr]
    with pytest.raises(ArmUnreachable) as raised:
        await run_burst(config, client)
    assert str(raised.value) == (
        f"arm A {a_url} is not reachable: connection refused; "
        f"arm B (mtp-on) {b_url} is not reachable: connection refused"
    )
