"""A client's TTFT against an idle `spectop sim` over the sim's own figure: no more kept-alive than fresh
(without TCP_NODELAY, Nagle holds a kept-alive connection's SSE chunks until the client's delayed ACK)."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Awaitable

import httpx
import pytest

from tests.sim.conftest import samples, sim_processes, value

REQUESTS = 8
STALL_S = 0.040  # Linux's delayed ACK; kept-alive and fresh alternate, so load slows both alike


async def _client_ttft(client: httpx.AsyncClient) -> float:
    """Seconds from sending a streaming chat request to the first chunk that carries generated text."""
    body = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 12, "stream": True}
    started = time.perf_counter()
    first: float | None = None
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if first is not None or not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                first = time.perf_counter() - started
    assert first is not None, "no generated text in the stream"
    return first


async def _sim_ttft_sum(client: httpx.AsyncClient, flavor: str) -> tuple[float, float]:
    page = samples((await client.get("/metrics")).text)
    name = f"{flavor}:time_to_first_token_seconds"
    return value(page, name + "_sum"), value(page, name + "_count")


async def _fresh_client_ttft(url: str) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=10.0) as client:
        return await _client_ttft(client)


async def _overhead(client: httpx.AsyncClient, flavor: str, request: Awaitable[float]) -> float:
    """The client's TTFT of one request less the sim's own figure of it."""
    sum_before, count_before = await _sim_ttft_sum(client, flavor)
    client_ttft = await request
    sum_after, count_after = await _sim_ttft_sum(client, flavor)
    assert count_after - count_before == 1
    return client_ttft - (sum_after - sum_before)


@pytest.mark.parametrize("flavor", ["vllm", "sglang"])
async def test_kept_alive_ttft_is_not_held_back(flavor: str) -> None:
    with sim_processes(["--flavor", flavor]) as (url,):
        async with httpx.AsyncClient(base_url=url, timeout=10.0) as client:
            await _client_ttft(client)  # warm-up: imports, first connection
            await _fresh_client_ttft(url)
            kept_alive, fresh = [], []  # concurrency 1: one connection for all, or a new one for each
            for _ in range(REQUESTS):
                kept_alive.append(await _overhead(client, flavor, _client_ttft(client)))
                fresh.append(await _overhead(client, flavor, _fresh_client_ttft(url)))
    kept_p50, fresh_p50 = statistics.median(kept_alive), statistics.median(fresh)

    def ms(seconds: list[float]) -> list[float]:
        return [round(t * 1000, 1) for t in seconds]

    assert kept_p50 < fresh_p50 + STALL_S / 2, (
        f"client TTFT over the sim's own, p50: kept-alive {kept_p50 * 1000:.1f} ms, "
        f"fresh {fresh_p50 * 1000:.1f} ms (kept-alive: {ms(kept_alive)}, fresh: {ms(fresh)})"
    )
