"""An httpx transport that spreads requests over several connection pools.

httpcore's pool re-scans every waiting request against every connection whenever one
is released, so with dozens of concurrent streams in one pool a new request can wait
hundreds of ms before its first byte is written (measured in tests/bench/). Several
small pools behind one client keep that wait near zero. Requests go to the least busy
shard.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx

STREAMS_PER_SHARD = 16


class _CountedStream(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, done: Callable[[], None]) -> None:
        self._stream = stream
        self._done = done
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            if not self._closed:
                self._closed = True
                self._done()


class ShardedTransport(httpx.AsyncBaseTransport):
    def __init__(self, max_connections: int, *, streams_per_shard: int = STREAMS_PER_SHARD) -> None:
        shards = max(1, -(-max_connections // streams_per_shard))
        per_shard = -(-max_connections // shards)
        limits = httpx.Limits(max_connections=per_shard, max_keepalive_connections=per_shard)
        self._shards = [httpx.AsyncHTTPTransport(limits=limits) for _ in range(shards)]
        self._busy = [0] * shards
        self.max_connections = per_shard * shards

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = min(range(len(self._shards)), key=self._busy.__getitem__)
        self._busy[index] += 1

        def done() -> None:
            self._busy[index] -= 1

        try:
            response = await self._shards[index].handle_async_request(request)
        except BaseException:
            done()
            raise
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _CountedStream(stream, done)
        return response

    async def aclose(self) -> None:
        for shard in self._shards:
            await shard.aclose()


def burst_client(max_connections: int, *, timeout_s: float = 120.0) -> httpx.AsyncClient:
    """An AsyncClient for bursts of up to `max_connections` concurrent streams."""
    return httpx.AsyncClient(transport=ShardedTransport(max_connections), timeout=timeout_s)
