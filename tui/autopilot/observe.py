"""What the autopilot sees each interval: per server, whether it is up and its figures over the interval.
Fleet mode reads Prometheus (`FleetPoller`, its rate window one interval); one server is scraped directly,
its figures the difference of this scrape and the one before (`ScrapeWindow`). The figure the tests
compare is `speed`: decode tokens/s per running request (1 / TPOT). Errors are the inference handlers'
5xx answers in `http_requests_total` (vLLM's, and the sim's); a server without that counter (SGLang's has
no status label, llama.cpp has none) has no error figure: its error check cannot be made, and says so."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

import httpx

from tui.fleet.client import PrometheusError
from tui.fleet.poller import FleetPoller, by_instance
from tui.fleet.queries import selector
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import Sample
from tui.telemetry.scraper import Scrape, scrape_metrics
from tui.telemetry.window import ScrapeWindow

HTTP_COUNTER = "http_requests_total"
INFERENCE = "/v1/"  # the handlers whose answers count (not /metrics, /health)


@dataclass(frozen=True)
class Errors:
    """Answers per second of the inference handlers over the interval, and how many of them were 5xx."""

    failed_per_s: float
    answered_per_s: float


@dataclass(frozen=True)
class Seen:
    up: bool
    figures: Figures
    model: str | None = None
    job: str | None = None
    group: str | None = None
    errors: Errors | None = None  # None: the server exposes no counter of failed answers


def speed(figures: Figures) -> float | None:
    """Decode tokens/s per running request: 1 / TPOT, else generation tokens/s over the running requests."""
    tpot = figures.tpot_mean_s
    if tpot is not None and tpot > 0 and math.isfinite(tpot):
        return 1.0 / tpot
    tokens, running = figures.generation_tokens_per_s, figures.running
    if tokens is None or not running or running <= 0:
        return None
    return tokens / running


def answer_counts(samples: tuple[Sample, ...] | None) -> tuple[float, float] | None:
    """(5xx answers, all answers) of the inference handlers on one page; None without the counter."""
    if samples is None:
        return None
    counted = [
        s for s in samples if s.name == HTTP_COUNTER and s.labels.get("handler", "").startswith(INFERENCE)
    ]
    if not counted:
        return None
    return sum(s.value for s in counted if s.labels.get("status") == "5xx"), sum(s.value for s in counted)


def errors_between(last: Scrape, now: Scrape) -> Errors | None:
    before, after = answer_counts(last.samples), answer_counts(now.samples)
    seconds = now.monotonic - last.monotonic
    if before is None or after is None or seconds <= 0 or after[1] < before[1]:  # none, or a restart
        return None
    return Errors((after[0] - before[0]) / seconds, (after[1] - before[1]) / seconds)


class FleetEyes:
    """Every instance Prometheus knows, one refresh (and one query of the errors) per call."""

    def __init__(self, poller: FleetPoller) -> None:
        self.poller = poller

    async def __call__(self) -> dict[str, Seen]:
        refresh, errors = await asyncio.gather(self.poller.refresh(), self.errors())
        return {
            r.instance: Seen(
                r.up and not r.prometheus_error, r.figures, r.model, r.job, r.group, errors.get(r.instance)
            )
            for r in refresh.readings
        }

    async def errors(self) -> dict[str, Errors]:
        """Each instance's answers and 5xx answers per second over the poller's window (none: unknown)."""
        window = f"{max(1, round(self.poller.window_s))}s"
        handlers = f'handler=~"{INFERENCE}.*"'

        def rate(*extra: str) -> str:
            inner = selector(HTTP_COUNTER, self.poller.matchers, handlers, *extra)
            return f"sum by (instance) (rate({inner}[{window}]))"

        query = self.poller.client.query_vector
        try:
            answers = await asyncio.gather(query(rate('status="5xx"')), query(rate()))
        except PrometheusError:
            return {}  # this interval's errors are unknown: the check waits for the next
        failed, answered = (by_instance(samples) for samples in answers)
        return {instance: Errors(failed.get(instance, 0.0), count) for instance, count in answered.items()}


class ServerEyes:
    """One server's /metrics: its figures since the call before (none on the first call)."""

    def __init__(self, name: str, metrics_url: str, client: httpx.AsyncClient) -> None:
        self.name, self.metrics_url, self.client = name, metrics_url, client
        self.last: Scrape | None = None

    async def __call__(self) -> dict[str, Seen]:
        scrape = await scrape_metrics(self.client, self.metrics_url)
        last, self.last = self.last, scrape if scrape.up else None
        if not scrape.up or last is None:
            return {self.name: Seen(scrape.up, Figures())}
        window = ScrapeWindow(window_s=math.inf, max_scrapes=2, backend=scrape.backend)
        window.add(last)
        window.add(scrape)
        return {self.name: Seen(True, window.figures(), errors=errors_between(last, scrape))}
