"""A tiny loopback HTTP server answering planned `Reply`s, page builders, and `spectop` as users run it."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tui.telemetry.backends import detect_backend
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import parse_metrics_text
from tui.telemetry.scraper import Scrape
from tui.telemetry.window import ScrapeWindow

# Copies of shared/reference/samples/*/metrics_t{0,1}.txt (see metrics_samples/README.md).
SAMPLES = Path(__file__).parent / "metrics_samples"
EPOCH = 1.79e9  # the Unix `time` of a scrape made `at` seconds in (its `monotonic` is `at`)


def sample_body(backend: str, name: str) -> bytes:
    """A sample page as a server would send it (saved HTTP headers removed)."""
    raw = (SAMPLES / backend / name).read_bytes()
    if raw.startswith(b"HTTP/"):
        raw = raw.split(b"\r\n\r\n", 1)[1]
    return raw


def scrape(text: str, at: float) -> Scrape:
    """A scrape of the page `text`, made without a server."""
    samples = tuple(parse_metrics_text(text))
    return Scrape(time=EPOCH + at, monotonic=at, samples=samples, error=None, backend=detect_backend(samples))


VLLM_LABELS = 'engine="0",model_name="m"'


def vllm_page(
    generated: float | str | None,
    drafts: float | str | None = None,
    accepted: float | str | None = None,
    extra: str = "",
    *,
    draft_tokens: float | str | None = None,
    k: float = 2,
    positions: Sequence[float] = (),
    running: float = 3,
    model: str = "m",
) -> str:
    """A vLLM page of engine 0: the counters given (None: not printed; `k` draft tokens a draft unless
    `draft_tokens` says), the per-position family, the running gauge, then `extra`."""
    labels = f'engine="0",model_name="{model}"'
    if draft_tokens is None and drafts is not None:
        draft_tokens = drafts if isinstance(drafts, str) else k * drafts
    counters = {
        "generation_tokens_total": generated,
        "spec_decode_num_drafts_total": drafts,
        "spec_decode_num_draft_tokens_total": draft_tokens,
        "spec_decode_num_accepted_tokens_total": accepted,
    }
    lines = [f"vllm:{name}{{{labels}}} {value}" for name, value in counters.items() if value is not None]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {value}'
        for i, value in enumerate(positions)
    ]
    return "\n".join([*lines, f"vllm:num_requests_running{{{labels}}} {running}"]) + "\n" + extra


def sglang_ttft_page(counts: list[float], total_s: float) -> str:
    bounds = ["0.1", "0.2", "0.4", "0.6", "0.8", "1.0", "2.0", "+Inf"]
    labels = 'model_name="m",tp_rank="0"'
    lines = [
        f'sglang:time_to_first_token_seconds_bucket{{{labels},le="{bound}"}} {count}'
        for bound, count in zip(bounds, counts, strict=True)
    ]
    lines += [
        f"sglang:time_to_first_token_seconds_sum{{{labels}}} {total_s}",
        f"sglang:time_to_first_token_seconds_count{{{labels}}} {counts[-1]}",
        f"sglang:num_running_reqs{{{labels}}} 1",
    ]
    return "\n".join(lines) + "\n"


ROOT = Path(__file__).resolve().parents[2]


async def spectop(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tui",
        *args,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def assert_rate(value: float | None, increase: float, window_s: float) -> None:
    """A rate over a window of about window_s (the real Δt is a little longer)."""
    assert value is not None
    assert increase / (window_s + 3.0) <= value <= increase / window_s * 1.001


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def poll_clock(monkeypatch: pytest.MonkeyPatch, moments: Iterable[float]) -> Callable[[], float]:
    """Call before each poll: the scraper's monotonic clock moves on to the next of `moments` (returned)."""
    upcoming = iter(moments)

    def poll_moment() -> float:
        moment = next(upcoming)
        monkeypatch.setattr("tui.telemetry.scraper.time.monotonic", lambda: moment)
        return moment

    return poll_moment


def sample_scrapes(backend: str, seconds: float) -> tuple[Scrape, Scrape]:
    """The backend's two sample pages, `seconds` apart."""
    return (
        scrape(sample_body(backend, "metrics_t0.txt").decode(), 100.0),
        scrape(sample_body(backend, "metrics_t1.txt").decode(), 100.0 + seconds),
    )


def window_figures(*scrapes: Scrape, window_s: float = 60.0) -> Figures:
    window = ScrapeWindow(window_s=window_s)
    for each in scrapes:
        window.add(each)
    return window.figures()


@dataclass
class Reply:
    body: bytes = b""
    status: int = 200
    delay_s: float = 0.0  # before the headers
    chunked: bool = False  # send the body in chunks without Content-Length
    headers: dict[str, str] = field(default_factory=dict)
    # Makes the body when the request is answered (e.g. a start stamp of that moment); `body` otherwise.
    make_body: Callable[[], bytes] | None = None
    content_type: str = "text/plain"


@dataclass
class Request:
    path: str
    headers: dict[str, str]


class ReplyServer:
    def __init__(self, replies: list[Reply], routes: dict[str, Reply] | None = None) -> None:
        self.replies = replies
        # Fixed replies by path (e.g. "/slots"); they do not use up the planned replies.
        self.routes = routes or {}
        self._planned = 0
        self.requests: list[Request] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.url = ""

    async def __aenter__(self) -> ReplyServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        for task in list(self._handlers):  # slow replies must not hold up the test
            task.cancel()
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        await answer_request(reader, writer, self._reply)

    async def _reply(self, request: Request) -> Reply:
        self.requests.append(request)
        reply = self.routes.get(request.path)
        if reply is None:
            self._planned += 1
            reply = self.replies[min(self._planned - 1, len(self.replies) - 1)]
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        return reply


async def answer_request(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    reply_to: Callable[[Request], Awaitable[Reply]],
) -> None:
    """Read one HTTP/1.1 request, write the `Reply` that `reply_to` gives, close the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        reply = await reply_to(Request(lines[0].split(" ")[1], headers))
        body = reply.make_body() if reply.make_body is not None else reply.body
        extra = "".join(f"{key}: {value}\r\n" for key, value in reply.headers.items())
        status_line = (
            f"HTTP/1.1 {reply.status} X\r\nContent-Type: {reply.content_type}\r\n{extra}Connection: close\r\n"
        )
        if reply.chunked:
            writer.write((status_line + "Transfer-Encoding: chunked\r\n\r\n").encode())
            for start in range(0, len(body), 65536):
                chunk = body[start : start + 65536]
                writer.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")
        else:
            writer.write((status_line + f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()
