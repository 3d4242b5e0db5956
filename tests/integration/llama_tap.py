"""A pass-through HTTP tap in front of a real server: it forwards GETs and records when each one arrived.

`spectop snapshot` scrapes at the start and at the end of its window and llama.cpp logs no access lines,
so a test that must run its requests strictly inside the window points spectop at this tap and waits
for the first scrape to pass through before it sends anything.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

FORWARD_TIMEOUT_S = 10.0


class MetricsTap:
    """Forwards `GET <path>` to `upstream` + path; `scrapes` holds (monotonic time the upstream answered,
    path) of each request."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.scrapes: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        tap = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                try:
                    upstream_response = httpx.get(tap.upstream + self.path, timeout=FORWARD_TIMEOUT_S)
                except httpx.HTTPError:
                    self.send_error(502, "upstream unreachable")
                    return
                finally:
                    # Recorded once the upstream page is made, not on arrival: a test that waits for a
                    # scrape and then sends requests must not race the page it waited for.
                    with tap._changed:
                        tap.scrapes.append((time.monotonic(), self.path))
                        tap._changed.notify_all()
                body = upstream_response.content
                self.send_response(upstream_response.status_code)
                content_type = upstream_response.headers.get("content-type", "text/plain")
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def metrics_scrapes(self) -> list[float]:
        with self._lock:
            return [at for at, path in self.scrapes if path.startswith("/metrics")]

    def wait_for_metrics_scrapes(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while len([1 for _, path in self.scrapes if path.startswith("/metrics")]) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    def __enter__(self) -> MetricsTap:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
