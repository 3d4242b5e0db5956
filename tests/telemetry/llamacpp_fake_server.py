"""A llama-server stand-in on a loopback socket: /metrics (gauges reset per GET) and /slots."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from metrics_test_server import Reply, Request, answer_request

# A busy server, past 40k tokens (where it once went wrong: the old tolerance grew with this counter).
BUSY = {"tokens": 50_000.0, "seconds": 52.345, "prompt_tokens": 9000.0, "prompt_seconds": 3.1}


def _printed(value: float) -> str:
    return f"{value:.6g}"


@dataclass
class FakeLlamaServer:
    tokens: float = 0.0
    seconds: float = 0.0
    prompt_tokens: float = 0.0
    prompt_seconds: float = 0.0
    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted: float = 0.0
    # Accepted tokens per draft position (printed only once non-empty, as llama.cpp does).
    per_position: list[float] = field(default_factory=list)
    slots_enabled: bool = True
    process_start: str = "1000"
    running: dict[int, int] = field(default_factory=dict)  # slot id -> n_decoded
    paths: list[str] = field(default_factory=list)
    # Called after each GET /metrics was answered: what the server did before the next request came.
    after_metrics: Callable[[], None] | None = None
    # Since the last GET /metrics (by anyone): what the two gauges cover.
    _decode_tokens: float = 0.0
    _decode_seconds: float = 0.0
    _bucket_prompt_tokens: float = 0.0
    _bucket_prompt_seconds: float = 0.0
    _server: asyncio.Server | None = None
    url: str = ""

    def finish(
        self, tokens: int, seconds: float, prompt_tokens: int = 20, prompt_seconds: float = 0.01
    ) -> None:
        """A request ends: its tokens reach the counters (and leave its slot)."""
        self.tokens += tokens
        self.seconds += seconds
        self._decode_tokens += tokens - 1
        self._decode_seconds += seconds
        self.prompt_tokens += prompt_tokens
        self.prompt_seconds += prompt_seconds
        self._bucket_prompt_tokens += prompt_tokens
        self._bucket_prompt_seconds += prompt_seconds

    def restart(self, process_start: str) -> None:
        """A new process: every counter from zero."""
        self.tokens = self.seconds = self.prompt_tokens = self.prompt_seconds = 0.0
        self.drafts = self.draft_tokens = self.accepted = 0.0
        self.per_position = []
        self._decode_tokens = self._decode_seconds = 0.0
        self._bucket_prompt_tokens = self._bucket_prompt_seconds = 0.0
        self.running = {}
        self.process_start = process_start

    def metrics_page(self) -> str:
        gauge = self._decode_tokens / self._decode_seconds if self._decode_seconds else 0.0
        prompt_gauge = (
            self._bucket_prompt_tokens / self._bucket_prompt_seconds if self._bucket_prompt_seconds else 0.0
        )
        self._decode_tokens = self._decode_seconds = 0.0
        self._bucket_prompt_tokens = self._bucket_prompt_seconds = 0.0
        values = {
            "prompt_tokens_total": self.prompt_tokens,
            "prompt_seconds_total": self.prompt_seconds,
            "tokens_predicted_total": self.tokens,
            "tokens_predicted_seconds_total": self.seconds,
            "spec_decode_num_draft_tokens_total": self.draft_tokens,
            "spec_decode_num_accepted_tokens_total": self.accepted,
            "spec_decode_num_drafts_total": self.drafts,
            "prompt_tokens_seconds": prompt_gauge,
            "predicted_tokens_seconds": gauge,
            "requests_processing": float(len(self.running)),
            "requests_deferred": 0.0,
        }
        lines = [f"llamacpp:{name} {_printed(value)}" for name, value in values.items()]
        for position, value in enumerate(self.per_position):
            name = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
            lines.append(f'{name}{{position="{position}"}} {_printed(value)}')
        return "\n".join(lines) + "\n"

    def slots_body(self) -> str:
        slots = [
            {
                "id": slot,
                "n_ctx": 1024,
                "speculative": True,
                "is_processing": slot in self.running,
                "next_token": [
                    {"has_next_token": True, "n_remain": 100, "n_decoded": self.running.get(slot, 0)}
                ],
            }
            for slot in range(2)
        ]
        return json.dumps(slots)

    async def __aenter__(self) -> FakeLlamaServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self, port: int = 0) -> None:
        """Listen (again): on `port`, e.g. the one it had before it was stopped; 0 picks a free one."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port)
        host, bound = self._server.sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{bound}"

    async def stop(self) -> None:
        """Stop listening, as a killed llama-server: connections are refused until `start`."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await answer_request(reader, writer, self._reply)

    async def _reply(self, request: Request) -> Reply:
        self.paths.append(request.path)
        headers = {"Process-Start-Time-Unix": self.process_start}
        if request.path == "/metrics":
            page = self.metrics_page()
            if self.after_metrics is not None:
                self.after_metrics()
            return Reply(page.encode(), headers=headers, content_type="text/plain; version=0.0.4")
        if request.path == "/slots" and self.slots_enabled:
            return Reply(self.slots_body().encode(), headers=headers, content_type="application/json")
        if request.path == "/slots":
            error = b'{"error":{"code":501,"message":"This server does not support slots endpoint."}}'
            return Reply(error, status=501, headers=headers)
        return Reply(status=404, headers=headers)
