"""The sharded transport `spectop bench` uses: several small pools behind one client."""

from __future__ import annotations

import asyncio

import pytest
from timed_server import Behaviour, TimedServer

from tui.bench.engine import ArmTarget, BurstConfig, BurstConfigError, run_burst
from tui.bench.prompts import load_prompt_set
from tui.bench.schedule import LoadShape
from tui.bench.transport import ShardedTransport, burst_client


def test_shards_cover_the_connections_asked_for() -> None:
    transport = ShardedTransport(72, streams_per_shard=16)
    assert len(transport._shards) == 5
    assert transport.max_connections >= 72


async def test_streams_spread_over_shards_and_are_released() -> None:
    with TimedServer(Behaviour(ttft_s=0.05, interval_s=0.01, chunks=5)) as server:
        async with burst_client(32) as client:
            transport = client._transport
            assert isinstance(transport, ShardedTransport)
            peak: list[int] = []

            async def one() -> None:
                async with client.stream("POST", f"{server.base_url}/v1/completions", json={}) as response:
                    peak.append(max(transport._busy))
                    async for _ in response.aiter_bytes():
                        pass

            await asyncio.gather(*(one() for _ in range(32)))
            assert max(peak) <= 16  # least-busy placement: no shard above its size
            assert transport._busy == [0] * len(transport._busy)


async def test_engine_checks_the_sharded_limit() -> None:
    async with burst_client(8) as client:
        config = BurstConfig(
            a=ArmTarget("x", "http://127.0.0.1:9", model="m", scrape_metrics=False),
            prompt_set=load_prompt_set("chat"),
            load=LoadShape(concurrency=64),
        )
        with pytest.raises(BurstConfigError, match="connection limit"):
            await run_burst(config, client)
