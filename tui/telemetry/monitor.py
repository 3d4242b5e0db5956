"""Polling one endpoint: scrape, window, figures, backoff while it is down."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from tui.auth import ApiKeyError, endpoint_headers
from tui.format import FIGURES_FAILED
from tui.settings import EndpointSettings
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import MetricsParser
from tui.telemetry.reading import EndpointReading
from tui.telemetry.scraper import DEFAULT_TIMEOUT_S, Scrape, failed, fetch_body, scrape_with_slots
from tui.telemetry.window import ScrapeWindow

BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 30.0
_MODELS_MAX_BYTES = 1 * 2**20
_METRICS_BACKENDS = ("vllm", "sglang", "llamacpp")
SLOTS_RETRY_S = 60.0

log = logging.getLogger(__name__)


class _ModelCard(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str


class _ModelList(BaseModel):  # the body of GET /v1/models (OpenAI shape; llama.cpp adds fields we ignore)
    model_config = ConfigDict(extra="ignore")
    data: list[_ModelCard]


def backoff_s(consecutive_failures: int) -> float:
    """Seconds to wait after the n-th failure in a row: 2, 4, 8, 16, 30, 30, ..."""
    if consecutive_failures <= 0:
        return 0.0
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** min(consecutive_failures - 1, 16))


async def fetch_model_ids(
    client: httpx.AsyncClient,
    base_url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[str] | str:
    """Model ids from GET {base_url}/v1/models, or an error text."""
    url = f"{base_url.rstrip('/')}/v1/models"
    result = await fetch_body(client, url, timeout_s, _MODELS_MAX_BYTES, headers or {})
    if isinstance(result, str):
        return result
    try:
        models = _ModelList.model_validate(json.loads(result[0].decode("utf-8", errors="replace")))
    except (ValueError, ValidationError):
        return f"{url}: expected a JSON object with data: [{{id: ...}}]"
    return [card.id for card in models.data]


class EndpointMonitor:
    """One per endpoint: owns its ScrapeWindow; backs off while the endpoint is down."""

    def __init__(self, endpoint: EndpointSettings, window_s: float) -> None:
        self.endpoint = endpoint
        forced = endpoint.backend if endpoint.backend in _METRICS_BACKENDS else None
        self.window = ScrapeWindow(window_s, backend=forced)
        self.consecutive_failures = 0
        self._last_attempt: float | None = None
        self._listed_model: str | None = None
        self._models_asked = False
        self._parser = MetricsParser()  # this endpoint's: what repeats between its pages
        # llama.cpp /slots: why it gave nothing, and when it was last asked.
        self.slots_error: str | None = None
        self._slots_failed_at: float | None = None
        self.figure_failures = 0  # polls whose figures could not be derived (a bug: see the debug log)

    def due(self, now_monotonic: float) -> bool:  # False while backing off after failures
        if self._last_attempt is None or self.consecutive_failures == 0:
            return True
        return now_monotonic - self._last_attempt >= backoff_s(self.consecutive_failures)

    async def _list_model(self, client: httpx.AsyncClient) -> list[str] | str:
        """Ask /v1/models (once: for servers without a model label); the ids or why not."""
        self._models_asked = True
        ids = await fetch_model_ids(client, self.endpoint.url, headers=endpoint_headers(self.endpoint))
        if isinstance(ids, list) and ids:
            self._listed_model = ", ".join(ids[:3])
        return ids

    async def _scrape_metrics(self, client: httpx.AsyncClient) -> Scrape:
        now = time.monotonic()
        ask_slots = self._slots_failed_at is None or now - self._slots_failed_at >= SLOTS_RETRY_S
        scrape, slots_error = await scrape_with_slots(
            client,
            self.endpoint.url,
            self.endpoint.resolved_metrics_url,
            known_backend=self.window.backend,
            ask_slots=ask_slots,
            headers=endpoint_headers(self.endpoint),
            parser=self._parser,
        )
        if slots_error is not None:
            self.slots_error = slots_error
            self._slots_failed_at = now
        elif scrape.extra_counters:
            self.slots_error = None
            self._slots_failed_at = None
        return scrape

    async def _scrape(self, client: httpx.AsyncClient) -> Scrape:
        try:
            endpoint_headers(self.endpoint)
        except ApiKeyError as error:  # said instead of httpx's error, which would quote the key
            return failed(str(error))
        if self.endpoint.backend != "openai":
            return await self._scrape_metrics(client)
        # Hosted OpenAI-compatible gateways have no /metrics: reachability is all there is.
        ids = await self._list_model(client)
        return failed(ids) if isinstance(ids, str) else Scrape(time.time(), time.monotonic(), (), None, None)

    def _model(self) -> str | None:
        if self.endpoint.model:
            return self.endpoint.model
        if self.window.models:
            return ", ".join(self.window.models)
        return self._listed_model

    async def poll(self, client: httpx.AsyncClient) -> EndpointReading:
        """Scrape once and return the reading. Never raises (except on cancellation)."""
        self._last_attempt = time.monotonic()
        try:
            scrape = await self._scrape(client)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug must not stop the dashboard: shown as the error, and logged
            log.exception("%s: scraping %s failed", self.endpoint.name, self.endpoint.resolved_metrics_url)
            scrape = failed(f"internal error: {type(error).__name__}: {error} (see the debug log)")
        if scrape.up:
            self.consecutive_failures = 0
            self.window.add(scrape)
            if not self._models_asked and not self.endpoint.model and not self.window.models:
                try:
                    await self._list_model(client)
                except asyncio.CancelledError:
                    raise
                except Exception:  # fetch_model_ids answers every HTTP failure: this is a bug
                    log.exception("%s: asking /v1/models failed", self.endpoint.name)
                    self._listed_model = None
        else:
            self.consecutive_failures += 1
            # Down: what comes back may be a new process with other flags (--slots): ask /slots at once.
            self.slots_error = None
            self._slots_failed_at = None
        figures_failed = 0
        try:
            figures = self.window.figures()
            per_model = self.window.figures_by_model()
        except Exception:  # a bug in a figure rule must not stop polling: counted, shown, logged
            self.figure_failures += 1
            figures_failed = self.figure_failures
            log.exception("%s: deriving the figures failed (%d times)", self.endpoint.name, figures_failed)
            figures, per_model = Figures(), {}
        backend = self.window.backend or scrape.backend
        problem = self.window.inconsistent if scrape.up and self.window.inconsistent else scrape.error
        if figures_failed:  # every figure reads "–": say it is spectop's failure, not the server's silence
            problem = FIGURES_FAILED if problem is None else f"{FIGURES_FAILED} · {problem}"
        if backend == "llamacpp" and self.slots_error and "generation_tokens_per_s" in figures.notes:
            note = f"{figures.notes['generation_tokens_per_s']} (/slots: {self.slots_error})"
            figures.notes["generation_tokens_per_s"] = note
        if backend is None and self.endpoint.backend == "openai":
            backend = "openai"
        return EndpointReading(
            name=self.endpoint.name,
            url=self.endpoint.url,
            time=scrape.time,
            up=scrape.up,
            error=problem,
            backend=backend,
            model=self._model(),
            window_s=round(self.window.covered_s, 3),
            figures=figures,
            consecutive_failures=self.consecutive_failures,
            per_model=per_model,
            figures_failed=figures_failed,
            impossible_figures=self.window.impossible_figures,
        )
