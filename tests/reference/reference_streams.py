"""One streamed request against a real local HTTP server (127.0.0.1, port 0) that answers `body`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "telemetry"))
from metrics_test_server import Reply, ReplyServer

from tui.bench.request import RequestSpec, RetryBudget, endpoint_url, run_request
from tui.bench.results import RequestResult


def sse(events: list[dict[str, Any] | str]) -> bytes:
    """`data: <json>\\n\\n` per event; the stream always ends with `data: [DONE]\\n\\n` (vllm.md §4)."""
    parts = [f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n" for event in events]
    return "".join(parts).encode() + b"data: [DONE]\n\n"


async def run_stream(body: bytes, api: str = "chat") -> RequestResult:
    """`body` (SSE text) sent chunked to one `run_request`, as a server streaming it would."""
    async with ReplyServer([Reply(body, chunked=True)]) as server:
        body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}
        url = endpoint_url(server.url, api)
        spec = RequestSpec(url=url, body=body, headers={}, arm="a", index=0, round=0, prompt_id="p0")
        async with httpx.AsyncClient() as client:
            return await run_request(
                client,
                spec,
                t0=time.perf_counter(),
                scheduled_s=0.0,
                timeout_s=10.0,
                max_retries=0,
                budget=RetryBudget(0),
            )
