"""Measured TTFT, TPOT and decode tokens/s against a server whose every write is timed."""

from __future__ import annotations

import statistics

import httpx
import pytest
from timed_server import Behaviour, Record, TimedServer

from tests.bench.bursts import burst_config
from tui.bench.client_check import CPU_BUSY_SHARE
from tui.bench.engine import run_burst
from tui.bench.results import BurstResult

TTFT_S, INTERVAL_S, TOKENS_PER_CHUNK, CHUNKS = 0.08, 0.02, 3, 15
# Median client overhead allowed on TTFT, as a share of the server's own TTFT (a ratio, not a wall-clock
# limit: the figures themselves are measured by tests/benchmarks/bench_burst_engine.py). At 64 simultaneous
# first chunks the last one is noticed after the other 63 were handled; on a loaded 2-core machine that
# approaches the server's TTFT, never the several-fold a blocking client would add.
TTFT_OVERHEAD_S = {1: 0.25 * TTFT_S, 64: 1.5 * TTFT_S}
# A machine busy with other work starves the client: its own check then says it fell behind (the loop's
# lag), and its decode figures are rightly left out. The burst runs again, up to this many times, for one
# where the client kept up; the strict comparison runs on that one.
BURSTS = 3


async def _burst(client: httpx.AsyncClient, concurrency: int) -> tuple[BurstResult, dict[str, Record]]:
    behaviour = Behaviour(
        ttft_s=TTFT_S, interval_s=INTERVAL_S, tokens_per_chunk=TOKENS_PER_CHUNK, chunks=CHUNKS
    )
    requests = 64 if concurrency == 64 else 8
    with TimedServer(behaviour) as server:
        config = burst_config(
            server.base_url, requests=requests, warmup=concurrency, rounds=1, concurrency=concurrency
        )
        result = await run_burst(config, client)
        records = {r.headers["x-request-id"].rsplit("-", 1)[1]: r for r in server.records}
    measured = result.arms[0].requests
    assert len(measured) == requests and all(r.ok for r in measured)
    return result, records


@pytest.mark.parametrize("concurrency", [1, 64])
async def test_measured_timing_matches_the_server(client: httpx.AsyncClient, concurrency: int) -> None:
    for _ in range(BURSTS):
        result, records = await _burst(client, concurrency)
        check = result.arms[0].client_check
        assert check is not None
        if check.ok:
            break
    measured = result.arms[0].requests
    assert result.clock_origin_s is not None
    tokens = TOKENS_PER_CHUNK * CHUNKS
    overheads, decode_errors, gap_errors = [], [], []
    for request in measured:
        record = records[f"a{request.index}"]
        assert request.output_tokens == tokens
        assert request.tokens_per_chunk == TOKENS_PER_CHUNK
        assert request.ttft_s is not None
        on_wire = result.clock_origin_s + request.sent_s
        assert on_wire <= record.received_s  # the send stamp precedes the request reaching the server
        server_ttft = record.writes_s[0] - record.received_s
        assert server_ttft >= TTFT_S - 0.002
        assert request.ttft_s >= server_ttft - 0.001  # never less than the truth
        overheads.append(request.ttft_s - (record.writes_s[0] - on_wire))
        assert overheads[-1] >= -0.001  # the client read the first chunk after the server wrote it
        if request.decode_from == "none":  # left out: the client fell behind (below)
            assert request.tpot_s is None and request.decode_tokens_per_s is None
            continue
        assert request.decode_from == "client" and request.tpot_s is not None
        server_decode = (tokens - 1) / (record.writes_s[-1] - record.writes_s[0])
        decode_errors.append((request.decode_tokens_per_s or 0) / server_decode - 1)
        assert request.tpot_s == pytest.approx(1 / (request.decode_tokens_per_s or 1))
        server_gap = (record.writes_s[-1] - record.writes_s[0]) / (CHUNKS - 1)
        gap_errors.append((request.chunk_gap_s or 0) / server_gap - 1)
    # A starved client notices late now and then, not always: some first chunk is read at once (a stamp
    # taken late, or a fixed delay, moves them all).
    assert min(overheads) < TTFT_OVERHEAD_S[1]
    # Sleeps on a busy box only ever run late: the design values are lower bounds.
    assert statistics.median(r.ttft_s or 0 for r in measured) >= TTFT_S - 0.002
    if not check.ok:
        # Starved in every burst: the client says so, is not the busy part itself, and its overhead is
        # what its own loop's lag explains (a blocking client would add whole streams: seconds).
        assert check.reason and check.remedy
        assert check.cpu_share is not None and check.cpu_share < CPU_BUSY_SHARE, check.reason
        lag = check.loop_lag_p99_s or 0.0
        assert statistics.median(overheads) < TTFT_OVERHEAD_S[concurrency] + lag, check.reason
        return
    assert len(decode_errors) == len(measured)  # a client that kept up measured every decode
    assert statistics.median(overheads) < TTFT_OVERHEAD_S[concurrency]
    assert abs(statistics.median(decode_errors)) < 0.05
    assert abs(statistics.median(gap_errors)) < 0.05
    assert statistics.median(r.tpot_s or 0 for r in measured) >= 0.9 * INTERVAL_S / TOKENS_PER_CHUNK
