"""The per-engine queries through a real Prometheus: only instances with two or more data-parallel engines
answer, with the figures of each (one server of two engines, one of a single engine)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fleet.conftest import NEEDS_PROMETHEUS, start_prometheus, wait_targets_up, write_config
from tui.fleet.poller import FleetPoller
from tui.fleet.queries import engine_queries
from tui.settings import PrometheusSettings

pytestmark = NEEDS_PROMETHEUS

STARTED = time.time()


def page(engines: tuple[str, ...]) -> bytes:
    """A vLLM page whose counters grow with the time: 100 tokens/s, 50 drafts/s per engine; engine "1"
    accepts 20% of its drafts, the others 80%."""
    elapsed = time.time() - STARTED
    lines = []
    for engine in engines:
        labels = f'engine="{engine}",model_name="m"'
        accepted = 0.2 if engine == "1" else 0.8
        lines += [
            f"vllm:generation_tokens_total{{{labels}}} {100 * elapsed:.3f}",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {50 * elapsed:.3f}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {50 * accepted * elapsed:.3f}",
            f"vllm:num_requests_running{{{labels}}} 1",
        ]
    return ("\n".join(lines) + "\n").encode()


class Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        engines = ("0", "1") if self.path == "/metrics/two" else ("0",)
        body = page(engines)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def prometheus_url(tmp_path: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    config = write_config(tmp_path / "prometheus.yml", {})
    config.write_text(
        config.read_text(encoding="utf-8")
        + "".join(
            f"  - job_name: {name}\n    metrics_path: /metrics/{name}\n"
            f"    static_configs:\n      - targets: ['{address}']\n        labels: {{replica: {name}}}\n"
            f"    relabel_configs:\n      - target_label: instance\n        replacement: {name}\n"
            for name in ("two", "one")
        ),
        encoding="utf-8",
    )
    prometheus = start_prometheus(config, tmp_path)
    try:
        wait_targets_up(prometheus.url, 2)
        yield prometheus.url
    finally:
        prometheus.stop()
        server.shutdown()


async def test_only_instances_with_several_engines_answer(prometheus_url: str) -> None:
    figures = [query.figure for query in engine_queries("", 4.0)]
    assert figures == ["acceptance_rate", "generation_tokens_per_s"]
    async with FleetPoller(PrometheusSettings(url=prometheus_url, timeout_s=5.0), 4.0) as poller:
        every = "sum by (instance, engine) (rate(vllm:generation_tokens_total[4s]))"
        for _ in range(100):  # rate() needs two scrapes in the window, of each of the three engines
            if len(await poller.client.query_vector(every)) == 3:
                break
            await asyncio.sleep(0.2)
        samples = await poller.client.query_vector(engine_queries("", 4.0)[1].expr)
        assert sorted((s["metric"]["instance"], s["metric"]["engine"]) for s in samples) == [
            ("two", "0"),
            ("two", "1"),
        ]
        refresh = await poller.refresh()
    readings = {reading.instance: reading for reading in refresh.readings}
    assert readings["one"].engines == {}
    two = readings["two"].engines
    assert sorted(two) == ["0", "1"]
    assert two["0"].acceptance_rate == pytest.approx(0.8, abs=0.02)
    assert two["1"].acceptance_rate == pytest.approx(0.2, abs=0.02)
    tokens = [two[engine].generation_tokens_per_s for engine in ("0", "1")]
    assert tokens[0] is not None and tokens[0] > 0
    assert tokens[1] == pytest.approx(tokens[0], rel=0.05)  # both engines write at the same speed
