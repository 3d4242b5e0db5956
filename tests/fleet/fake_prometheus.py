"""A fake Prometheus HTTP API on a real loopback socket, for the fault tests.

`answer(path, form)` decides each reply: (status, JSON-able body or raw bytes, delay in seconds).
Requests (path, form, headers) are recorded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

Answer = tuple[int, Any, float]


@dataclass
class Seen:
    path: str
    form: dict[str, str]
    headers: dict[str, str]


def vector(*rows: tuple[dict[str, str], str], at: float = 0.0) -> dict[str, Any]:
    """A successful instant-query answer."""
    return {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": m, "value": [at, v]} for m, v in rows]},
    }


class FakePrometheus:
    def __init__(self, answer: Callable[[str, dict[str, str]], Answer]) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.url = ""

    async def __aenter__(self) -> FakePrometheus:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._server is None:
            return
        for task in list(self._tasks):
            task.cancel()
        self._server.close()
        await self._server.wait_closed()
        self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                _, target, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, _, value = header.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                parts = urlsplit(target)
                form = dict(parse_qsl(parts.query))
                form.update(parse_qsl(body.decode("utf-8")))
                self.seen.append(Seen(parts.path, form, headers))
                status, payload, delay = self.answer(parts.path, form)
                if delay:
                    await asyncio.sleep(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                kind = "text/html" if isinstance(payload, bytes) else "application/json"
                head = f"HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {len(data)}\r\n\r\n"
                writer.write(head.encode() + data)
                await writer.drain()
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
