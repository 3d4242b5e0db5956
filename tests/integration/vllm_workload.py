"""Traffic for the real-server tests, and the servers' own figures read independently of spectop.

`/metrics` pages are parsed with prometheus_client (not spectop's parser); deltas, rates and histogram
quantiles are computed here the way Prometheus computes them. A pass-through tap keeps what it forwarded,
and when: a test compares spectop with the very pages spectop read, and runs its requests strictly inside a
window by waiting for spectop's first scrapes to pass through (llama.cpp logs no access lines).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from llama_workload import log_size, read_log, wait_until
from prometheus_client.parser import text_string_to_metric_families

MODEL = "tiny"
Page = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_page(text: str) -> Page:
    page: Page = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            page[(sample.name, tuple(sorted(sample.labels.items())))] = float(sample.value)
    return page


def total(page: Page, name: str, **labels: str) -> float:
    """Σ of the samples called `name` whose labels include `labels`."""
    return sum(
        value
        for (sample, sample_labels), value in page.items()
        if sample == name and all((key, wanted) in sample_labels for key, wanted in labels.items())
    )


def delta(before: Page, after: Page, name: str, **labels: str) -> float:
    return total(after, name, **labels) - total(before, name, **labels)


def buckets(page: Page, name: str) -> dict[float, float]:
    out: defaultdict[float, float] = defaultdict(float)
    for (sample, labels), value in page.items():
        if sample == f"{name}_bucket":
            out[float(dict(labels)["le"])] += value
    return out


def histogram_quantile(q: float, before: Page, after: Page, name: str) -> float | None:
    """Prometheus' histogram_quantile over the increase of `name`'s buckets between two pages."""
    start, end = buckets(before, name), buckets(after, name)
    increase = sorted((bound, end[bound] - start.get(bound, 0.0)) for bound in end)
    count = increase[-1][1] if increase else 0.0
    if count <= 0:
        return None
    rank = q * count
    lower_bound, lower_count = 0.0, 0.0
    for bound, cumulative in increase:
        if cumulative >= rank:
            if bound == float("inf"):
                return lower_bound
            if cumulative == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (cumulative - lower_count)
        lower_bound, lower_count = bound, cumulative
    return None


def read_page(url: str) -> Page:
    return parse_page(httpx.get(url.rstrip("/") + "/metrics", timeout=30).text)


def completion(url: str, prompt: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    body = {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}
    response = httpx.post(url.rstrip("/") + "/v1/completions", json=body, timeout=600)
    response.raise_for_status()
    return dict(response.json())


def served_k(url: str) -> int:
    """The k the server answers with (its per-request figures; 0 with speculation off)."""
    spec = (completion(url, "w5 w6 w7", 8).get("metrics") or {}).get("speculative_decoding")
    return int(spec["num_spec_tokens"]) if spec else 0


def prompt(index: int) -> str:
    return " ".join(f"w{(index * 7 + j * 13) % 500 + 3}" for j in range(4 + index % 5))


Send = Callable[[str, int], object]  # one request to the URL: a worker's index-th


@dataclass
class SteadyLoad:
    """`concurrency` workers sending requests back to back until stopped."""

    url: str
    send: Send
    concurrency: int = 2
    sent: int = 0
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def _work(self, worker: int) -> None:
        index = worker
        while not self._stop.is_set():
            try:
                self.send(self.url, index)
                self.sent += 1
            except httpx.HTTPError as error:
                self.errors.append(repr(error))
                del self.errors[:-20]
                time.sleep(0.5)  # down (a restart): no busy loop
            index += self.concurrency

    def start(self) -> SteadyLoad:
        for worker in range(self.concurrency):
            thread = threading.Thread(target=self._work, args=(worker,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


@contextmanager
def steady_load(
    urls: list[str], concurrency: int = 2, max_tokens: int = 24, send: Send | None = None
) -> Iterator[list[SteadyLoad]]:
    """A steady load on each URL: completions of `prompt(index)` unless `send` makes the requests."""
    send = send or (lambda url, index: completion(url, prompt(index), max_tokens))
    loads = [SteadyLoad(url, send, concurrency).start() for url in urls]
    try:
        yield loads
    finally:
        for load in loads:
            load.stop()


# --- the server's log ----------------------------------------------------------------------------------

_SPEC_LINE = re.compile(r"SpecDecoding metrics: .*Accepted: (\d+) tokens, Drafted: (\d+) tokens")
_IDLE_LINE = re.compile(
    r"Engine 000: Avg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s"
)


def wait_for_idle_line(path: Path, start: int) -> int:
    """Waits until the log prints an idle `Engine 000:` line after byte `start` (the stats logger has
    flushed every interval with traffic); returns the log's size then."""
    wait_until(lambda: _IDLE_LINE.search(read_log(path, start)) is not None, math.inf, step_s=1.0)
    return log_size(path)


def wait_until_quiet(path: Path, url: str) -> int:
    """Waits until the log has logged all the traffic so far: its `SpecDecoding metrics:` lines add up to
    the server's accepted-token counter, and its last `Engine 000:` line is an idle one (or there is none:
    no traffic since the start); returns the log's size then. The counter is needed: another test's traffic
    just before is logged only at the stats logger's next tick, until then the last line can be the idle one
    from before it."""
    while True:
        size = log_size(path)
        text = read_log(path)
        engine_lines = [line for line in text.splitlines() if "Engine 000: " in line]
        idle = not engine_lines or _IDLE_LINE.search(engine_lines[-1]) is not None
        counted = total(read_page(url), "vllm:spec_decode_num_accepted_tokens_total")
        if idle and sum(int(accepted) for accepted, _ in _SPEC_LINE.findall(text)) == counted:
            return size
        time.sleep(1.0)


def sse_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects of an SSE answer (`data: {...}` lines, `[DONE]` left out)."""
    lines = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line.strip() != "[DONE]"]


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
