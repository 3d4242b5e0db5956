"""The measuring client checks itself: a starved client is flagged, a buffering server told apart."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
from timed_server import Behaviour, TimedServer

from tests.bench.bursts import burst_config
from tui.bench.engine import run_burst
from tui.bench.report.export import render_csv, render_json, render_markdown
from tui.bench.report.summary import burst_summary
from tui.bench.report.text import render_text
from tui.bench.results import BurstResult

TTFT_S, INTERVAL_S, TOKENS_PER_CHUNK, CHUNKS = 0.03, 0.02, 3, 15
# The server's true pace: (tokens - 1) over the time from the first chunk to the last.
TRUE_PACE = (TOKENS_PER_CHUNK * CHUNKS - 1) / ((CHUNKS - 1) * INTERVAL_S)


async def _starve(stop: asyncio.Event) -> None:
    """Another busy thing in the client's process: it holds the event loop 150 ms at a time."""
    while not stop.is_set():
        time.sleep(0.15)  # blocking on purpose: the loop cannot read the streams meanwhile
        await asyncio.sleep(0.03)


async def _burst(behaviour: Behaviour, concurrency: int, requests: int, *, starve: bool) -> BurstResult:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    with TimedServer(behaviour) as server:
        config = burst_config(
            server.base_url, requests=requests, concurrency=concurrency, rounds=1, max_tokens=64
        )
        async with httpx.AsyncClient(limits=limits) as client:
            stop = asyncio.Event()
            starving = asyncio.create_task(_starve(stop)) if starve else None
            try:
                return await run_burst(config, client)
            finally:
                stop.set()
                if starving is not None:
                    await starving


def _decode_figures(result: BurstResult) -> list[float]:
    summary = burst_summary(result)
    rate = summary.a.decode_tokens_per_s
    figures = [rate.pooled, rate.p10, rate.p50, rate.p90]
    figures += [r.decode_tokens_per_s for r in result.arms[0].requests]
    return [figure for figure in figures if figure is not None]


async def _unstarved_burst(behaviour: Behaviour, concurrency: int, requests: int) -> BurstResult:
    """Not starved by the test; a busy machine may still make it late: up to three tries."""
    for _ in range(3):
        result = await _burst(behaviour, concurrency, requests, starve=False)
        check = result.arms[0].client_check
        if check is not None and check.ok:
            break
    return result


def _paced(**extra: object) -> Behaviour:
    return Behaviour(
        ttft_s=TTFT_S, interval_s=INTERVAL_S, tokens_per_chunk=TOKENS_PER_CHUNK, chunks=CHUNKS, **extra
    )


async def test_a_starved_client_is_flagged_everywhere_and_prints_no_figure_above_the_servers_pace() -> None:
    for server_metrics in (True, False):
        result = await _burst(_paced(server_metrics=server_metrics), 16, 32, starve=True)
        check = result.arms[0].client_check
        assert check is not None and not check.ok
        assert check.reason is not None and "event loop" in check.reason and check.remedy
        assert check.loop_lag_max_s is not None and check.loop_lag_max_s > 0.1
        figures = _decode_figures(result)
        assert all(figure <= 1.5 * TRUE_PACE for figure in figures), (figures, TRUE_PACE)
        if server_metrics:  # the server's own timing stands in for the client's chunk times
            assert check.server_timed > 0 and figures
            assert {r.decode_from for r in result.arms[0].requests} == {"server"}
        text = render_text(burst_summary(result))
        assert "THE CLIENT FELL BEHIND" in text and "remedy" in text
        assert "THE CLIENT FELL BEHIND" in render_markdown(burst_summary(result, with_detail=False))
        exported = json.loads(render_json(result))
        assert exported["a"]["client_check"]["ok"] is False and exported["a"]["client_check"]["reason"]
        assert "decode tok/s mean" not in text  # pooled and percentiles, never a mean of rates
        assert render_csv(result).count("\n") == 1 + 32


async def test_the_same_burst_unstarved_is_not_flagged() -> None:
    result = await _unstarved_burst(_paced(server_metrics=True), 4, 12)
    check = result.arms[0].client_check
    assert check is not None and check.ok, check
    assert check.coalesced == 0 and check.ticks > 0
    assert "FELL BEHIND" not in render_text(burst_summary(result))
    assert {r.decode_from for r in result.arms[0].requests} == {"client"}


async def test_a_server_that_buffers_whole_streams_is_told_apart_and_its_own_timing_used() -> None:
    result = await _unstarved_burst(_paced(server_metrics=True, buffered=True), 2, 6)
    check = result.arms[0].client_check
    assert check is not None and check.ok  # the client kept up: the server buffered
    assert check.coalesced == 6 and check.coalesced_server == 6 and check.coalesced_client == 0
    requests = result.arms[0].requests
    assert all(r.coalesced == "server" and r.decode_from == "server" for r in requests)
    for request in requests:  # the server's pace, not the client's "all chunks within a millisecond"
        assert request.decode_tokens_per_s is not None
        assert 0.8 * TRUE_PACE < request.decode_tokens_per_s < 1.2 * TRUE_PACE
        assert request.client_decode_sample() is not None
    text = render_text(burst_summary(result))
    assert "6 streams coalesced (6 buffered by the server); 6 use the server's own timing" in text


async def test_a_buffered_stream_without_server_timing_is_left_out_and_counted() -> None:
    result = await _burst(_paced(buffered=True), 2, 4, starve=False)
    check = result.arms[0].client_check
    assert check is not None and check.coalesced == 4 and check.left_out == 4
    assert burst_summary(result).a.decode_tokens_per_s.p50 is None  # "–", never a absurd rate
    assert "4 left out of decode figures" in render_text(burst_summary(result))
