"""A pass-through HTTP tap in front of a real server: it keeps what it forwarded, and when.

A test compares spectop with the very pages spectop read, and runs its requests strictly inside a window
by waiting for spectop's first scrapes to pass through (llama.cpp logs no access lines).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from vllm_workload import Page, parse_page, sse_objects


class RecordingTap:
    """A pass-through HTTP tap that keeps (monotonic time the upstream answered, path, body) of every GET,
    and (request JSON, response text) of every POST, whose answer it streams on as it arrives."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.seen: list[tuple[float, str, str]] = []
        self.posts: list[tuple[dict[str, Any], str]] = []
        self._changed = threading.Condition()
        tap = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = self.rfile.read(length)
                headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                received: list[bytes] = []
                with httpx.stream(
                    "POST", tap.upstream + self.path, content=request, headers=headers, timeout=600
                ) as answer:
                    self.send_response(answer.status_code)
                    self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in answer.iter_raw():
                        received.append(chunk)
                        self.wfile.write(chunk)
                        self.wfile.flush()
                self.close_connection = True
                with tap._changed:
                    answer_text = b"".join(received).decode("utf-8", "replace")
                    tap.posts.append((json.loads(request or b"{}"), answer_text))

            def do_GET(self) -> None:
                try:
                    answer = httpx.get(tap.upstream + self.path, timeout=60)
                except httpx.HTTPError:
                    self.send_error(502, "upstream unreachable")
                    return
                with tap._changed:
                    tap.seen.append((time.monotonic(), self.path, answer.text))
                    tap._changed.notify_all()
                body = answer.content
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", "text/plain"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def pages(self) -> list[tuple[float, Page]]:
        with self._changed:
            return [(at, parse_page(body)) for at, path, body in self.seen if path.startswith("/metrics")]

    def streams(self) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Per streamed POST, in order: its request and the JSON objects of its answer."""
        return [(request, sse_objects(text)) for request, text in self.posts if request.get("stream")]

    def metrics_scrapes(self) -> list[float]:
        """When each /metrics page was answered (monotonic time)."""
        with self._changed:
            return [at for at, path, _ in self.seen if path.startswith("/metrics")]

    def wait_for_metrics_scrapes(self, count: int, timeout_s: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.metrics_scrapes()) >= count, timeout_s)

    def __enter__(self) -> RecordingTap:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=30)
