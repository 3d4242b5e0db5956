"""An httpx transport over several small pools sharing one TLS context (httpcore rescans one pool)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable

import httpx

STREAMS_PER_SHARD = 16


@contextlib.asynccontextmanager
async def client_or_own(client: httpx.AsyncClient | None) -> AsyncIterator[httpx.AsyncClient]:
    """`client` (the app's one client, left open), or a client of its own for this block."""
    if client is not None:
        yield client
        return
    async with httpx.AsyncClient(timeout=10.0) as own:
        yield own


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
    def __init__(
        self,
        max_connections: int,
        *,
        streams_per_shard: int = STREAMS_PER_SHARD,
        tls_at_first_request: bool = False,
    ) -> None:
        shards = max(1, -(-max_connections // streams_per_shard))
        per_shard = -(-max_connections // shards)
        self._limits = httpx.Limits(max_connections=per_shard, max_keepalive_connections=per_shard)
        self._shards: list[httpx.AsyncHTTPTransport | None] = [None] * shards  # https:// (any but http://)
        self._plain: list[httpx.AsyncHTTPTransport | None] = [None] * shards  # http://
        self._busy = [0] * shards
        self._tls: ssl.SSLContext | None = None if tls_at_first_request else httpx.create_ssl_context()
        self._tls_made: asyncio.Task[ssl.SSLContext] | None = None
        self._no_tls: ssl.SSLContext | None = None
        self.max_connections = per_shard * shards

    async def _shard(self, index: int, plain: bool) -> httpx.AsyncHTTPTransport:
        shards = self._plain if plain else self._shards
        if (shard := shards[index]) is not None:
            return shard
        if plain:
            # http:// never opens TLS; this context trusts no CA, so any use of it fails closed.
            self._no_tls = self._no_tls or ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context = self._no_tls
        else:
            if self._tls is None:
                if self._tls_made is None:  # one for every pool, however many requests wait for it
                    self._tls_made = asyncio.ensure_future(asyncio.to_thread(httpx.create_ssl_context))
                self._tls = await asyncio.shield(self._tls_made)
            context = self._tls
        if (shard := shards[index]) is None:  # another request may have made it meanwhile
            shard = shards[index] = httpx.AsyncHTTPTransport(verify=context, limits=self._limits)
        return shard

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = min(range(len(self._shards)), key=self._busy.__getitem__)
        self._busy[index] += 1

        def done() -> None:
            self._busy[index] -= 1

        try:
            shard = await self._shard(index, plain=request.url.scheme == "http")
            response = await shard.handle_async_request(request)
        except BaseException:
            done()
            raise
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _CountedStream(stream, done)
        return response

    async def aclose(self) -> None:
        for shard in (*self._shards, *self._plain):
            if shard is not None:
                await shard.aclose()


def burst_client(max_connections: int, *, timeout_s: float = 120.0) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=ShardedTransport(max_connections), timeout=timeout_s)
