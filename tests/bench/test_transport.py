"""The sharded transport `spectop bench` uses: several small pools behind one client."""

from __future__ import annotations

import asyncio
import ssl

import httpx
import pytest
from timed_server import Behaviour, TimedServer

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


async def test_every_pool_shares_one_tls_context_made_when_first_needed() -> None:
    # 10 pools loading the CA bundle each took 0.3 s before the dashboard's first frame.
    assert ShardedTransport(32)._tls is not None  # a burst client: at once, no measured request waits
    transport = ShardedTransport(32, tls_at_first_request=True)
    assert transport._tls is None and transport._shards == [None, None]
    with TimedServer(Behaviour(ttft_s=0.05, interval_s=0.01, chunks=2)) as server:
        async with httpx.AsyncClient(transport=transport) as client:

            async def one() -> None:
                async with client.stream("POST", f"{server.base_url}/v1/completions", json={}) as response:
                    async for _ in response.aiter_bytes():
                        pass

            await asyncio.gather(*(one() for _ in range(24)))  # more than one pool holds
            # Plain http:// (the dashboard's first scrape): no CA bundle loaded, before its frame or after.
            assert transport._tls is None and transport._tls_made is None
            plain = [shard for shard in transport._plain if shard is not None]
            assert len(plain) == 2
            no_tls = transport._no_tls
            assert {id(shard._pool._ssl_context) for shard in plain} == {id(no_tls)}
            # Were it ever used, it fails closed: certificates and host names required, no CA trusted.
            assert no_tls is not None and no_tls.verify_mode == ssl.CERT_REQUIRED and no_tls.check_hostname
            assert no_tls.cert_store_stats()["x509_ca"] == 0

            async def secure() -> None:
                with pytest.raises(httpx.ConnectError):  # nothing listens: TLS context made, then refused
                    await client.get("https://127.0.0.1:9/metrics")

            await asyncio.gather(*(secure() for _ in range(24)))
    assert transport._tls is not None and transport._tls.cert_store_stats()["x509_ca"] > 0
    shards = [shard for shard in transport._shards if shard is not None]
    assert len(shards) == 2
    assert {id(shard._pool._ssl_context) for shard in shards} == {id(transport._tls)}
