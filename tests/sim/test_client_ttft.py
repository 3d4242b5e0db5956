"""A client's TTFT against an idle `spectop sim` matches the sim's own figure, kept-alive or not.

The regression: the listening socket was made without `IPPROTO_TCP`, so asyncio never set `TCP_NODELAY` on
the accepted connections; after the response headers, Nagle held every SSE chunk until the client's delayed
ACK (~40 ms on Linux). A fresh connection hid it (quick-ACK mode), a kept-alive one did not.
"""

from __future__ import annotations

import json
import statistics
import time

import httpx
import pytest

from tests.sim.conftest import samples, spawn_sim, value

REQUESTS = 8
# The sim's figure and the client's differ by the HTTP and SSE overhead on loopback (well under a
# millisecond to a few ms on a busy machine); the Nagle stall added ~40 ms to every request.
TOLERANCE_S = 0.015
TTFT_SUM = {
    "vllm": "vllm:time_to_first_token_seconds_sum",
    "sglang": "sglang:time_to_first_token_seconds_sum",
}


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
    name = TTFT_SUM[flavor]
    return value(page, name), value(page, name.replace("_sum", "_count"))


async def _fresh_client_ttft(url: str) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=10.0) as client:
        return await _client_ttft(client)


@pytest.mark.parametrize("kept_alive", [True, False], ids=["kept-alive", "fresh-connection"])
@pytest.mark.parametrize("flavor", ["vllm", "sglang"])
async def test_client_ttft_matches_the_sims_own(flavor: str, kept_alive: bool) -> None:
    process, url = spawn_sim("--flavor", flavor)
    try:
        async with httpx.AsyncClient(base_url=url, timeout=10.0) as client:
            await _client_ttft(client)  # warm-up: imports, first connection
            sum_before, count_before = await _sim_ttft_sum(client, flavor)
            client_ttfts = []  # concurrency 1, one connection for all or a new one for each
            for _ in range(REQUESTS):
                client_ttfts.append(await (_client_ttft(client) if kept_alive else _fresh_client_ttft(url)))
            sum_after, count_after = await _sim_ttft_sum(client, flavor)
    finally:
        process.terminate()
        process.wait(timeout=5)
    assert count_after - count_before == REQUESTS
    sim_mean = (sum_after - sum_before) / REQUESTS
    client_p50 = statistics.median(client_ttfts)
    assert client_p50 - sim_mean < TOLERANCE_S, (
        f"client TTFT p50 {client_p50 * 1000:.1f} ms vs the sim's own {sim_mean * 1000:.1f} ms "
        f"(all: {[round(t * 1000, 1) for t in client_ttfts]})"
    )
