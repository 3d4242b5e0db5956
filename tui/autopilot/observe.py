"""What the autopilot sees each interval: per server, whether it is up and its figures over the interval.

Fleet mode reads Prometheus (`FleetPoller`, its rate window one interval); one server is scraped directly,
its figures the difference of this scrape and the one before (`ScrapeWindow`). The figure the tests
compare is `speed`: decode tokens/s per running request (1 / TPOT).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import httpx

from tui.fleet.poller import FleetPoller
from tui.telemetry.figures import Figures
from tui.telemetry.scraper import Scrape, scrape_metrics
from tui.telemetry.window import ScrapeWindow


@dataclass(frozen=True)
class Seen:
    up: bool
    figures: Figures
    model: str | None = None
    job: str | None = None
    group: str | None = None


def speed(figures: Figures) -> float | None:
    """Decode tokens/s per running request: 1 / TPOT, else generation tokens/s over the running requests."""
    tpot = figures.tpot_mean_s
    if tpot is not None and tpot > 0 and math.isfinite(tpot):
        return 1.0 / tpot
    tokens, running = figures.generation_tokens_per_s, figures.running
    if tokens is None or not running or running <= 0:
        return None
    return tokens / running


def load(figures: Figures) -> float | None:
    """The offered load: finished requests/s (running requests fall as a server gets faster)."""
    return figures.requests_per_s


class FleetEyes:
    """Every instance Prometheus knows, one refresh per call."""

    def __init__(self, poller: FleetPoller) -> None:
        self.poller = poller

    async def __call__(self) -> dict[str, Seen]:
        refresh = await self.poller.refresh()
        return {
            r.instance: Seen(r.up and not r.prometheus_error, r.figures, r.model, r.job, r.group)
            for r in refresh.readings
        }


class ServerEyes:
    """One server's /metrics: its figures since the call before (none on the first call)."""

    def __init__(self, name: str, metrics_url: str, client: httpx.AsyncClient) -> None:
        self.name, self.metrics_url, self.client = name, metrics_url, client
        self.last: Scrape | None = None

    async def __call__(self) -> dict[str, Seen]:
        scrape = await scrape_metrics(self.client, self.metrics_url)
        last, self.last = self.last, scrape if scrape.up else None
        if not scrape.up:
            return {self.name: Seen(False, Figures())}
        if last is None:
            return {self.name: Seen(True, Figures())}
        window = ScrapeWindow(window_s=math.inf, max_scrapes=2, backend=scrape.backend)
        window.add(last)
        window.add(scrape)
        return {self.name: Seen(True, window.figures())}
