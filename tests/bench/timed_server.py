"""A tiny OpenAI-style streaming server in its own process recording every write's time (`records`)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Behaviour:
    ttft_s: float = 0.05
    interval_s: float = 0.01
    tokens_per_chunk: int = 1
    chunks: int = 20
    status: int = 200
    stall_after_chunks: int | None = None  # stop writing, keep the connection open
    break_after_chunks: int | None = None  # close the connection mid-stream
    error_in_stream_after: int | None = None  # send data: {"error": ...} after this many chunks
    first_attempt_status: int | None = None  # answer this to the first attempt of each X-Request-Id
    retry_after: str | None = None  # Retry-After on error answers; "http-date+N": an HTTP-date N s ahead
    redirect_to: str | None = None  # answer every POST with `redirect_status` to this Location
    redirect_status: int = 302
    server_metrics: bool = False  # vLLM's per-request `metrics` (timing) on the usage chunk
    buffered: bool = False  # the stream is paced as usual but written out all at once at its end
    # Each request's interval is interval_s × (1 ± up to this), drawn from Random(spread_seed): a server
    # whose requests differ as real ones do, so a burst's interval is wider than a loaded machine's jitter.
    interval_spread: float = 0.0
    spread_seed: int = 0


@dataclass
class Record:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_s: float
    writes_s: list[float] = field(default_factory=list)  # content chunks only


class _ServerCore:
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.records: list[Record] = []
        self.handlers: set[asyncio.Task[None]] = set()
        self._seen_ids: set[str] = set()
        self._spread = random.Random(self.behaviour.spread_seed)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.handlers.add(task)
            task.add_done_callback(self.handlers.discard)
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                method, path, _ = request_line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                raw = await reader.readexactly(length) if length else b""
                keep_going = await self._respond(method, path, headers, raw, writer)
                if not keep_going:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            writer.close()

    async def _respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        b = self.behaviour
        if method == "GET" and path == "/_records":
            return await _answer(writer, "200 OK", [asdict(record) for record in self.records])
        if method == "GET" and path.endswith("/models"):
            return await _answer(writer, "200 OK", {"object": "list", "data": [{"id": "timed-model"}]})
        if method != "POST":
            return await _answer(writer, "404 Not Found")
        body = json.loads(raw) if raw else {}
        record = Record(path=path, headers=headers, body=body, received_s=time.perf_counter())
        request_id = headers.get("x-request-id", raw.decode(errors="replace"))
        self.records.append(record)
        first_attempt = request_id not in self._seen_ids
        self._seen_ids.add(request_id)
        status = b.first_attempt_status if first_attempt and b.first_attempt_status is not None else b.status
        if b.redirect_to is not None:
            return await _answer(
                writer, f"{b.redirect_status} Redirect", headers=f"Location: {b.redirect_to}\r\n"
            )
        if status != 200:
            extra = ""
            if b.retry_after is not None:
                value = b.retry_after
                if value.startswith("http-date+"):
                    ahead = float(value.removeprefix("http-date+"))
                    value = email.utils.formatdate(time.time() + ahead, usegmt=True)
                extra = f"Retry-After: {value}\r\n"
            error = {"error": {"message": f"status {status} as asked", "code": status}}
            return await _answer(writer, f"{status} Error", error, headers=extra)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )

        pending: list[bytes] = []  # buffered: everything goes out at the end

        def send(event: str) -> None:
            data = f"data: {event}\n\n".encode()
            framed = f"{len(data):x}\r\n".encode() + data + b"\r\n"
            if b.buffered:
                pending.append(framed)
            else:
                writer.write(framed)

        chat = path.endswith("/chat/completions")
        if chat:
            send(json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}))
            await writer.drain()
        interval_s = b.interval_s * (1.0 + b.interval_spread * (2.0 * self._spread.random() - 1.0))
        start = time.perf_counter()
        token = 0
        for chunk in range(b.chunks):
            if b.break_after_chunks is not None and chunk >= b.break_after_chunks:
                writer.transport.abort()
                return False
            if b.stall_after_chunks is not None and chunk >= b.stall_after_chunks:
                await asyncio.sleep(3600)
            if b.error_in_stream_after is not None and chunk >= b.error_in_stream_after:
                send(json.dumps({"error": {"message": "engine died", "type": "InternalServerError"}}))
                send("[DONE]")
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                return True
            due = start + b.ttft_s + chunk * interval_s
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            words = "".join(f"t{token + i} " for i in range(b.tokens_per_chunk))
            token += b.tokens_per_chunk
            said = {"delta": {"content": words}} if chat else {"text": words}
            event = {"choices": [{"index": 0, **said, "finish_reason": None}]}
            # Stamped before the write: a client cannot read the chunk earlier (after it, a descheduled
            # server process would stamp later than a client that already read it).
            record.writes_s.append(time.perf_counter())
            send(json.dumps(event))
            if not b.buffered:
                await writer.drain()
        finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
        send(json.dumps(finish))
        usage = {"prompt_tokens": 5, "completion_tokens": token, "total_tokens": token + 5}
        last: dict[str, Any] = {"choices": [], "usage": usage}
        if b.server_metrics and len(record.writes_s) > 1:
            generation_ms = (record.writes_s[-1] - record.writes_s[0]) * 1000
            first_ms = b.ttft_s * 1000
            last["metrics"] = {
                "time_to_first_token_ms": first_ms,
                "generation_time_ms": generation_ms,
                "mean_itl_ms": generation_ms / max(1, token - 1),
                "tokens_per_second": token / ((first_ms + generation_ms) / 1000),
            }
        send(json.dumps(last))
        send("[DONE]")
        writer.write(b"".join(pending))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


async def _answer(writer: asyncio.StreamWriter, status: str, document: Any = None, headers: str = "") -> bool:
    """A whole (non-streamed) answer: `document` as JSON, or no body."""
    payload = b"" if document is None else json.dumps(document).encode()
    kind = "Content-Type: application/json\r\n" if document is not None else ""
    writer.write(
        f"HTTP/1.1 {status}\r\n{kind}{headers}Content-Length: {len(payload)}\r\n\r\n".encode() + payload
    )
    await writer.drain()
    return True


class TimedServer:
    """The server in a child process; `records` are fetched from it on access."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.port = 0
        self._process: subprocess.Popen[str] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def records(self) -> list[Record]:
        with urllib.request.urlopen(f"{self.base_url}/_records", timeout=10) as response:
            return [Record(**item) for item in json.loads(response.read())]

    def __enter__(self) -> TimedServer:
        self._process = subprocess.Popen(
            [sys.executable, __file__, json.dumps(asdict(self.behaviour))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        self.port = int(self._process.stdout.readline())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is None:
            return
        assert self._process.stdin is not None
        self._process.stdin.close()  # the child exits when its stdin closes
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)


async def _serve(behaviour: Behaviour) -> None:
    """The child: serve until the parent closes its stdin."""
    core = _ServerCore(behaviour)
    server = await asyncio.start_server(core.handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.to_thread(sys.stdin.read)
    server.close()
    for task in list(core.handlers):
        task.cancel()
    await asyncio.gather(*core.handlers, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(_serve(Behaviour(**json.loads(sys.argv[1]))))
