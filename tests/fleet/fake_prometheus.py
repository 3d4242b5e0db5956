"""A fake Prometheus HTTP API on a real loopback socket: `answer(path, form)` decides each reply (status,
body, delay) and requests are recorded; `FakeFleet` answers as a Prometheus scraping its members would,
`healthy()` with two vLLM instances A and B."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tui.fleet.client import PrometheusClient
from tui.fleet.poller import FleetPoller, FleetRefresh
from tui.fleet.queries import figure_queries
from tui.settings import PrometheusSettings

Answer = tuple[int, Any, float]


@dataclass
class Seen:
    path: str
    form: dict[str, str]
    headers: dict[str, str]


def is_discovery(query: str) -> bool:
    """The poller's discovery query (tui/fleet/queries.py `discovery_query`), the first refresh's too."""
    return query.startswith("label_replace(count by (instance, job, model_name")


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


# --- a fleet behind the fake: its members decide every answer ----------------------------------------------

WINDOW_S = 30.0
FIGURE_OF = {query.expr: query.figure for query in figure_queries("", WINDOW_S)}
A, B = "10.0.0.1:8000", "10.0.0.2:8000"


@dataclass
class Member:
    name: str
    model: str = "m"
    up: bool = True
    figures: dict[str, float] = field(default_factory=dict)  # NaN: Prometheus answers NaN (an empty window)


@dataclass
class FakeFleet:
    """What Prometheus answers of `members` (vLLM, job "vllm"); `broken(query)` answers first where it
    answers, `failing` answers everything while set (status error, 503, slow)."""

    members: list[Member]
    failing: Answer | None = None
    scraped_age_s: float = 1.0
    broken: Callable[[str], Answer | None] | None = None

    def by_name(self) -> dict[str, Member]:
        return {member.name: member for member in self.members}

    def answer(self, path: str, form: dict[str, str]) -> Answer:
        query = form.get("query", "")
        special = self.failing or (self.broken and self.broken(query))
        if special:
            return special
        if path == "/api/v1/query_range":
            return 200, {"status": "success", "data": {"resultType": "matrix", "result": []}}, 0.0
        if is_discovery(query):
            rows = [
                ({"instance": m.name, "job": "vllm", "backend": "vllm", "model_name": m.model}, "16")
                for m in self.members
            ]
            return 200, vector(*rows), 0.0
        if query == "up":
            return 200, vector(*(({"instance": m.name}, "1" if m.up else "0") for m in self.members)), 0.0
        if query.startswith("timestamp(up"):
            stamp = f"{time.time() - self.scraped_age_s:.3f}"
            return 200, vector(*(({"instance": m.name}, stamp) for m in self.members)), 0.0
        figure = FIGURE_OF.get(query, "")
        rows = [
            ({"instance": m.name}, "NaN" if math.isnan(v) else repr(v))
            for m in self.members
            if m.up and (v := m.figures.get(figure)) is not None
        ]
        return 200, vector(*rows), 0.0


def healthy(
    *,
    up: tuple[bool, bool] = (True, True),
    scraped_age_s: float = 1.0,
    figures: dict[str, dict[str, float]] | None = None,
    broken: Callable[[str], Answer | None] | None = None,
) -> Callable[[str, dict[str, str]], Answer]:
    """A Prometheus that knows two vLLM instances A and B (`up`: whether each is)."""
    values = figures or {
        "generation_tokens_per_s": {A: 120.5, B: 80},
        "acceptance_rate": {A: 0.7, B: math.nan},
    }
    members = [
        Member(name, up=is_up, figures={f: by[name] for f, by in values.items() if name in by})
        for name, is_up in zip((A, B), up, strict=True)
    ]
    return FakeFleet(members, scraped_age_s=scraped_age_s, broken=broken).answer


def settings(url: str, **extra: Any) -> PrometheusSettings:
    # a hang guard (a busy host answers late): the tests of a timeout set their own
    return PrometheusSettings(url=url, timeout_s=extra.pop("timeout_s", 30.0), **extra)


async def refresh_with(answer: Callable[[str, dict[str, str]], Answer], **extra: Any) -> FleetRefresh:
    """One refresh of a FleetPoller against a fake Prometheus answering with `answer`."""
    async with FakePrometheus(answer) as fake:
        url = extra.pop("url_override", fake.url)
        async with FleetPoller(settings(url, **extra), WINDOW_S) as poller:
            return await poller.refresh()


async def query_with(answer: Callable[[str, dict[str, str]], Answer], **extra: Any) -> FakePrometheus:
    """One `up` query of a PrometheusClient against a fake Prometheus; returns the fake (requests seen)."""
    max_bytes = extra.pop("max_bytes", 2**20)
    async with FakePrometheus(answer) as fake:
        client = PrometheusClient(settings(fake.url, **extra), max_bytes=max_bytes)
        async with client:
            await client.query_vector("up")
    return fake
