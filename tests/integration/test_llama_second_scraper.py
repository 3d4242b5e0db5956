"""`spectop snapshot` on a real llama-server that a second scraper also reads: every GET /metrics resets
`predicted_tokens_seconds`, so spectop must say the finished requests are unknown (None, with the reason),
and what it does report must match the server's `timings`.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from llama_server import LlamaServer
from llama_spectop import json_lines, spectop_running
from llama_workload import log_size, run_requests, timings_totals, wait_for_finished_requests
from tap import RecordingTap

pytestmark = pytest.mark.llamacpp

WINDOW_S = 12.0
REQUESTS = 5
MAX_TOKENS = 48
SECOND_SCRAPER_PERIOD_S = 0.05


class SecondScraper:
    """Another client GETting /metrics every 50 ms (Prometheus at a short interval, or a second spectop)."""

    def __init__(self, url: str) -> None:
        self.url = f"{url}/metrics"
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=5.0) as client:
            while not self._stop.is_set():
                client.get(self.url)
                self.count += 1
                self._stop.wait(SECOND_SCRAPER_PERIOD_S)

    def __enter__(self) -> SecondScraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def test_a_second_scraper_never_makes_a_wrong_request_rate_or_tpot(
    llama_servers: dict[str, LlamaServer], tmp_path: Path
) -> None:
    server = llama_servers["noisy"]
    offset = log_size(server.log_file)
    with RecordingTap(server.url) as tap, SecondScraper(server.url) as other:
        args = ["snapshot", f"{tap.url}/metrics", "--json", "--window", str(WINDOW_S)]
        with spectop_running(args, tmp_path) as process:
            # The first GET tells spectop it is llama.cpp; /slots and a second GET start the window.
            assert tap.wait_for_metrics_scrapes(2, timeout_s=60), "spectop never scraped"
            responses = run_requests(server.url, REQUESTS, MAX_TOKENS)
            wait_for_finished_requests(server.log_file, offset, REQUESTS)
            finished_at = time.monotonic()
            stdout, stderr = process.communicate(timeout=WINDOW_S + 60)
        _, first, second = tap.metrics_scrapes()
    assert process.returncode == 0, stderr
    assert second > finished_at, "the workload outlasted the window"
    assert other.count > 50, "the second scraper hardly ran"
    [record] = json_lines(stdout)
    print({name: record[name] for name in ("requests_per_s", "tpot_mean_s", "notes")})
    assert record["up"] is True and record["backend"] == "llamacpp", record

    seconds = second - first
    tokens = sum(response["usage"]["completion_tokens"] for response in responses)
    assert record["generation_tokens_per_s"] == pytest.approx(tokens / seconds, rel=0.05)
    # Counters are untouched by the other scraper: acceptance is exact.
    accepted, drafted = timings_totals(responses)
    assert record["acceptance_rate"] == pytest.approx(accepted / drafted, abs=1e-9)

    # The request count needs the gauge the other scraper kept resetting: unknown, and said why.
    rate = record["requests_per_s"]
    if rate is not None:  # only if the other scraper happened not to steal any window (never, at 50 ms)
        assert rate == pytest.approx(REQUESTS / seconds, rel=0.02), record
    else:
        assert record["notes"].get("requests_per_s"), record["notes"]
    # TPOT: the server's own decode time per token (n − 1 tokens per request), or unknown with the reason
    # when the request count is (never a guess).
    true_tpot = sum(r["timings"]["predicted_ms"] for r in responses) / sum(
        r["timings"]["predicted_n"] - 1 for r in responses
    )
    if record["tpot_mean_s"] is None:
        assert rate is None and "another client" in record["notes"]["tpot_mean_s"], record["notes"]
    else:
        assert record["tpot_mean_s"] * 1000 == pytest.approx(true_tpot, rel=0.01), (record, true_tpot)
