"""One scrape of one /metrics URL with the app's shared httpx client. Never raises."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import functools
import logging
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass

import httpx
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from tui.format import fmt_setting
from tui.telemetry.backends import detect_backend
from tui.telemetry.prometheus import MetricsFormatError, MetricsParser, Sample, parse_metrics_text

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_BYTES = 8 * 2**20
_ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"


@dataclass(frozen=True)
class Scrape:
    time: float  # time.time() when the response arrived
    monotonic: float  # time.monotonic() at the same moment: use this for deltas
    samples: tuple[Sample, ...] | None  # None when the scrape failed
    error: str | None
    backend: str | None  # detected from metric names: "vllm" | "sglang" | "llamacpp" | None
    process_start: str | None = None  # llama.cpp's Process-Start-Time-Unix header (monotonic µs)
    # llama.cpp's /slots: {"slots_decoded": Σ n_decoded of the slots still generating}.
    extra_counters: Mapping[str, float] | None = None

    @property
    def up(self) -> bool:
        return self.samples is not None


def _size_text(max_bytes: int) -> str:
    if max_bytes >= 2**20 and max_bytes % 2**20 == 0:
        return f"{max_bytes // 2**20} MiB"
    if max_bytes >= 1024 and max_bytes % 1024 == 0:
        return f"{max_bytes // 1024} KiB"
    return f"{max_bytes} bytes"


def _connect_error_text(error: httpx.ConnectError) -> str:
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        cause = cause.__cause__ or cause.__context__
    text = str(error)
    if "refused" in text.lower():
        return "connection refused"
    return f"cannot connect: {text}" if text else "cannot connect"


def failed(error: str) -> Scrape:
    return Scrape(time=time.time(), monotonic=time.monotonic(), samples=None, error=error, backend=None)


async def fetch_body(
    client: httpx.AsyncClient, url: str, timeout_s: float, max_bytes: int, headers: dict[str, str]
) -> tuple[bytes, str | None] | str:
    """(body, Process-Start-Time-Unix header) or an error text; never raises."""
    try:
        async with asyncio.timeout(timeout_s):
            return await _get(client, url, timeout_s, max_bytes, headers)
    except (TimeoutError, httpx.TimeoutException):
        return f"timeout after {fmt_setting(timeout_s)} s"
    except httpx.ConnectError as error:
        return _connect_error_text(error)
    except httpx.InvalidURL as error:
        return f"invalid URL: {error}"
    except httpx.HTTPError as error:
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    except OSError as error:
        return f"network error: {error}"
    except Exception as error:  # never raise: a scrape failure is data, not a crash
        log.exception("GET %s failed unexpectedly", url)
        while isinstance(error, ExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
        return f"{type(error).__name__}: {error}"


async def _get(
    client: httpx.AsyncClient, url: str, timeout_s: float, max_bytes: int, headers: dict[str, str]
) -> tuple[bytes, str | None] | str:
    async with client.stream(
        "GET", url, headers=headers, timeout=timeout_s, follow_redirects=True
    ) as response:
        if response.status_code >= 400:
            return f"HTTP {response.status_code}"
        declared = response.headers.get("content-length")
        too_large = f"response larger than {_size_text(max_bytes)}"
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            return too_large
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                return too_large
            chunks.append(chunk)
        return b"".join(chunks), response.headers.get("process-start-time-unix")


async def scrape_metrics(
    client: httpx.AsyncClient,
    metrics_url: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    headers: dict[str, str] | None = None,
    parser: MetricsParser | None = None,
) -> Scrape:
    """GET metrics_url and parse it; failures come back as a Scrape with `error` set."""
    result = await fetch_body(
        client, metrics_url, timeout_s, max_bytes, {"Accept": _ACCEPT, **(headers or {})}
    )
    if isinstance(result, str):
        return failed(result)
    body, process_start = result
    arrived, arrived_monotonic = time.time(), time.monotonic()
    try:
        samples = tuple(parse_metrics_text(body.decode("utf-8", errors="replace"), parser))
    except MetricsFormatError as error:
        return Scrape(arrived, arrived_monotonic, None, f"not Prometheus text: {error}", None)
    return Scrape(arrived, arrived_monotonic, samples, None, detect_backend(samples), process_start)


_SLOTS_MAX_BYTES = 4 * 2**20


class _NextToken(BaseModel):
    model_config = ConfigDict(extra="ignore")
    n_decoded: int = Field(0, ge=0)


class _Slot(BaseModel):  # one entry of llama-server's GET /slots (a never-used slot has no next_token)
    model_config = ConfigDict(extra="ignore")
    is_processing: bool = False
    next_token: list[_NextToken] = Field(default_factory=list)


@functools.cache
def _slots_adapter() -> TypeAdapter[list[_Slot]]:  # made on the first /slots answer (slow to build)
    return TypeAdapter(list[_Slot])


async def fetch_slots_decoded(
    client: httpx.AsyncClient,
    base_url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> float | str:
    """Σ n_decoded of the slots still generating, from llama-server's GET /slots; else an error text."""
    url = f"{base_url.rstrip('/')}/slots"
    request_headers = {"Accept": "application/json", **(headers or {})}
    result = await fetch_body(client, url, timeout_s, _SLOTS_MAX_BYTES, request_headers)
    if isinstance(result, str):
        return result
    try:
        slots = _slots_adapter().validate_json(result[0])
    except ValidationError:
        return "not the JSON list of slots llama-server sends"
    running = (slot for slot in slots if slot.is_processing)
    return float(sum(sum(token.n_decoded for token in slot.next_token) for slot in running))


async def scrape_with_slots(
    client: httpx.AsyncClient,
    base_url: str,
    metrics_url: str,
    *,
    known_backend: str | None,
    ask_slots: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    headers: dict[str, str] | None = None,
    parser: MetricsParser | None = None,
) -> tuple[Scrape, str | None]:
    """A scrape with llama.cpp's live Σ n_decoded from /slots, and why /slots gave none. /slots is read
    just BEFORE /metrics, so a token decoded between the two GETs is counted by the next reading, never
    taken from a window that starts here. Until the backend is known the page is read first."""

    def scrape() -> Awaitable[Scrape]:
        return scrape_metrics(client, metrics_url, timeout_s=timeout_s, headers=headers, parser=parser)

    if known_backend == "llamacpp" and ask_slots:
        decoded = await fetch_slots_decoded(client, base_url, headers=headers, timeout_s=timeout_s)
        return _with_decoded(await scrape(), decoded)
    first = await scrape()
    if not ask_slots or known_backend is not None or not first.up or first.backend != "llamacpp":
        return first, None
    decoded = await fetch_slots_decoded(client, base_url, headers=headers, timeout_s=timeout_s)
    if isinstance(decoded, str):
        return first, decoded
    again = await scrape()
    return _with_decoded(again, decoded) if again.up else (first, None)


def _with_decoded(scrape: Scrape, decoded: float | str) -> tuple[Scrape, str | None]:
    if not scrape.up:  # the endpoint is down (killed, restarting): that is no answer from /slots either
        return scrape, None
    if isinstance(decoded, str):
        return scrape, decoded
    if scrape.backend != "llamacpp":
        return scrape, None
    return dataclasses.replace(scrape, extra_counters={"slots_decoded": decoded}), None
