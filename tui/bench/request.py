"""One streamed OpenAI-compatible request, timed chunk by chunk (redirects never followed: the API key)."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import math
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from tui.bench.results import ErrorKind, RequestResult
from tui.bench.server_figures import FigureReader
from tui.format import fmt_duration, fmt_setting

MAX_TEXT_CHARS = 100_000
MAX_CHUNKS = 200_000
MAX_LINE_BYTES = 1_000_000
MAX_ERROR_BODY_BYTES = 4_096
MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After fails the request rather than stall the burst
MAX_LOCATION_CHARS = 300
DRAIN_TIMEOUT_S = 0.05
STALE_RETRY_S = 0.01
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass
class RetryBudget:
    """Retries left for one arm beyond `max_retries` per request: one per request (at least 3)."""

    remaining: int
    cap: int | None = None

    @classmethod
    def for_requests(cls, requests: int, max_retries: int) -> RetryBudget:
        cap = 0 if max_retries <= 0 else max(3, requests)
        return cls(cap, cap)

    def take(self) -> bool:
        if self.remaining <= 0:
            return False
        self.remaining -= 1
        return True


@dataclass
class RequestSpec:
    url: str
    body: dict[str, Any]
    headers: dict[str, str] = field(repr=False)  # may hold the Authorization header: never print
    arm: str
    index: int
    round: int
    prompt_id: str
    category: str | None = None
    prompt_snippet: str = ""

    def result_fields(self) -> dict[str, Any]:
        """What every RequestResult of this request carries, whatever became of it."""
        names = ("arm", "index", "round", "prompt_id", "category", "prompt_snippet")
        return {name: getattr(self, name) for name in names}


# A stream that ends this way failed (vLLM's finished_reason, SGLang's final chunk): not a short success.
ABORTED_FINISH_REASONS = frozenset({"abort", "error"})


class _Failure(Exception):
    def __init__(self, kind: ErrorKind, message: str, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.status = status
        self.retryable = retryable
        self.retry_after_s: float | None = None

    def add(self, words: str) -> None:
        self.args = (f"{self}{words}",)


@dataclass
class _StreamState:
    ttft_s: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_chars: list[int] = field(default_factory=list)
    chunk_tokens: list[int | None] = field(default_factory=list)
    text_parts: list[str] = field(default_factory=list)
    text_chars: int = 0
    text_truncated: bool = False
    usage_tokens: int | None = None
    prompt_tokens: int | None = None
    timings_tokens: int | None = None
    finish_reason: str | None = None
    done: bool = False
    end_s: float | None = None
    on_wire: float | None = None  # perf_counter right before the request's first byte was written
    figures: FigureReader = field(default_factory=FigureReader)  # what the server says per request
    native_chars: int = 0  # SGLang native /generate: characters of the cumulative text seen so far


# Every native /generate request streams and asks for the drafts counts and histogram (sgl PR #33518).
NATIVE_FIELDS = {"stream": True, "return_spec_tokens_details": True}


def server_root(base_url: str) -> str:
    """The server's own root: `base_url` without an OpenAI path (/v1, /v1/completions, ...)."""
    base = base_url.rstrip("/")
    for suffix in ("/v1/chat/completions", "/v1/completions", "/v1"):
        base = base.removesuffix(suffix)
    return base


def endpoint_url(base_url: str, api: str) -> str:
    """The chat or completions URL under a base URL (with or without `/v1`), or SGLang's `/generate`."""
    paths = {"chat": "/v1/chat/completions", "sglang": "/generate"}
    return server_root(base_url) + paths.get(api, "/v1/completions")


def parse_retry_after(value: str) -> float | None:
    """Seconds to wait from a Retry-After header (delay-seconds or an HTTP-date); None if unreadable."""
    text = value.strip()[:100]
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _printable(text: str, limit: int) -> str:
    clean = "".join(char if char.isprintable() else "?" for char in text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _redirect_failure(response: httpx.Response, spec: RequestSpec) -> _Failure:
    status = response.status_code
    location = response.headers.get("location")
    if location:
        try:
            where = str(response.url.join(location))
        except (httpx.InvalidURL, ValueError):
            where = location
        said = f"redirected ({status}) to {_printable(where, MAX_LOCATION_CHARS)}"
    else:
        said = f"redirected ({status}) without a Location"
    keyed = any(name.lower() == "authorization" for name in spec.headers)
    return _Failure(
        "http_status", f"{said}; not followed" + (" (it would carry the API key)" if keyed else ""), status
    )


def _redact(message: str, secret: str | None) -> str:
    return message.replace(secret, "***") if secret else message


def _error_message(raw: bytes) -> str:
    text = raw[:MAX_ERROR_BODY_BYTES].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    error = data.get("error", data) if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    return error[:300] if isinstance(error, str) else " ".join(text.split())[:300]


def _handle_event(state: _StreamState, payload: bytes, now: float) -> None:
    if payload == b"[DONE]":
        state.done = True
        return
    try:
        event = json.loads(payload)
    except ValueError as error:
        raise _Failure("broken_stream", f"invalid JSON in the stream: {payload[:80]!r}") from error
    if not isinstance(event, dict):
        raise _Failure("broken_stream", f"unexpected event in the stream: {payload[:80]!r}")
    if event.get("error"):
        raise _Failure("broken_stream", f"server error inside the stream: {_error_message(payload)}")
    state.figures.feed(event)
    cumulative: int | None = None
    text = ""
    meta = event.get("meta_info")
    if isinstance(meta, dict) and isinstance(event.get("text"), str):
        text, cumulative = _native_event(state, event["text"], meta)
    usage = event.get("usage")
    if isinstance(usage, dict):
        completion = usage.get("completion_tokens")
        if isinstance(completion, int):
            cumulative = completion
        prompt = usage.get("prompt_tokens")
        if isinstance(prompt, int):
            state.prompt_tokens = prompt
    timings = event.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("predicted_n"), int):
        state.timings_tokens = timings["predicted_n"]
    token_ids_count: int | None = None
    choices = event.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        delta = choice.get("delta")
        if isinstance(delta, dict):
            text = (delta.get("reasoning_content") or "") + (delta.get("content") or "")
        elif isinstance(choice.get("text"), str):
            text = choice["text"]
        token_ids = choice.get("token_ids")
        if isinstance(token_ids, list):
            token_ids_count = len(token_ids)
        if choice.get("finish_reason"):
            state.finish_reason = str(choice["finish_reason"])
    if text:
        if state.ttft_s is None:
            state.ttft_s = now
        if len(state.chunk_times) < MAX_CHUNKS:
            state.chunk_times.append(now)
            state.chunk_chars.append(len(text))
            counted = token_ids_count if cumulative is None else cumulative - (state.usage_tokens or 0)
            state.chunk_tokens.append(counted)
        if state.text_chars < MAX_TEXT_CHARS:
            room = MAX_TEXT_CHARS - state.text_chars
            state.text_parts.append(text[:room])
            state.text_chars += min(room, len(text))
            state.text_truncated = state.text_truncated or len(text) > room
        else:
            state.text_truncated = True
    if cumulative is not None:
        state.usage_tokens = cumulative


def _native_event(state: _StreamState, text: str, meta: dict[str, Any]) -> tuple[str, int | None]:
    """SGLang native /generate: the text is cumulative, the token count in `meta_info`."""
    new = text[state.native_chars :] if len(text) >= state.native_chars else ""
    state.native_chars = max(state.native_chars, len(text))
    completion, prompt = meta.get("completion_tokens"), meta.get("prompt_tokens")
    if isinstance(prompt, int) and not isinstance(prompt, bool):
        state.prompt_tokens = prompt
    finish = meta.get("finish_reason")
    if isinstance(finish, dict) and isinstance(finish.get("type"), str):
        state.finish_reason = finish["type"][:40]
    counted = isinstance(completion, int) and not isinstance(completion, bool) and completion >= 0
    return new, completion if counted else None


async def _read_stream(response: httpx.Response, state: _StreamState) -> None:
    buffer = b""
    chunks = response.aiter_bytes()
    async for data in chunks:
        now = time.perf_counter()
        *lines, buffer = (buffer + data).split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                _handle_event(state, line[5:].strip(), now)
                if state.done:
                    state.end_s = now
                    await _drain(chunks)
                    return
        if len(buffer) > MAX_LINE_BYTES:
            raise _Failure("broken_stream", f"a stream line longer than {MAX_LINE_BYTES} bytes")
    now = time.perf_counter()
    if buffer.startswith(b"data:"):
        _handle_event(state, buffer[5:].strip(), now)
    state.end_s = now


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the rest of the body (the chunked-encoding end) so the connection can be reused."""
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(DRAIN_TIMEOUT_S):
            async for _ in chunks:
                pass


async def _attempt(client: httpx.AsyncClient, spec: RequestSpec, timeout: httpx.Timeout) -> _StreamState:
    state = _StreamState()

    async def trace(name: str, info: dict[str, Any]) -> None:
        if name.endswith("send_request_headers.started"):
            state.on_wire = time.perf_counter()

    try:
        async with client.stream(
            "POST",
            spec.url,
            json=spec.body,
            headers=spec.headers,
            timeout=timeout,
            extensions={"trace": trace},
            follow_redirects=False,
        ) as response:
            if 300 <= response.status_code < 400:
                raise _redirect_failure(response, spec)
            if response.status_code >= 400:
                raw = b""
                async for data in response.aiter_bytes():
                    raw += data
                    if len(raw) >= MAX_ERROR_BODY_BYTES:
                        break
                failure = _Failure(
                    "http_status",
                    f"HTTP {response.status_code}: {_error_message(raw)}",
                    status=response.status_code,
                    retryable=response.status_code in RETRYABLE_STATUS,
                )
                retry_after = parse_retry_after(response.headers.get("retry-after", ""))
                if failure.retryable and retry_after is not None:
                    if retry_after > MAX_RETRY_AFTER_S:
                        failure.retryable = False
                        failure.add(
                            f"; the server asks to retry after {fmt_duration(retry_after)}, more than "
                            f"the {fmt_setting(MAX_RETRY_AFTER_S)} s spectop waits: not retried"
                        )
                    else:
                        failure.retry_after_s = retry_after
                raise failure
            try:
                await _read_stream(response, state)
            except httpx.TimeoutException as error:
                raise _Failure("timeout", f"no data for the read timeout ({type(error).__name__})") from error
            except httpx.HTTPError as error:
                raise _Failure("broken_stream", f"stream broke: {type(error).__name__}: {error}") from error
    except (httpx.ConnectError, httpx.ConnectTimeout) as error:
        message = f"cannot connect: {type(error).__name__}: {error}"
        raise _Failure("connect", message, retryable=True) from error
    except httpx.TimeoutException as error:
        raise _Failure("timeout", f"timed out waiting for the server ({type(error).__name__})") from error
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as error:
        # Closed before any response (a keep-alive connection just dropped): a retry is safe.
        failure = _Failure("connect", f"connection closed before a response: {type(error).__name__}: {error}")
        failure.retryable = True
        failure.retry_after_s = STALE_RETRY_S
        raise failure from error
    except httpx.HTTPError as error:
        raise _Failure("broken_stream", f"{type(error).__name__}: {error}") from error
    if not state.done and state.finish_reason is None:
        raise _Failure("broken_stream", "stream ended before [DONE] or a finish_reason")
    if state.finish_reason in ABORTED_FINISH_REASONS:  # vLLM and SGLang end a dropped request so
        raise _Failure("broken_stream", f"the server ended the request (finish_reason {state.finish_reason})")
    return state


def _backoff_s(attempt: int, rng: random.Random) -> float:
    return min(MAX_BACKOFF_S, 0.25 * 2**attempt) * rng.uniform(0.5, 1.0)


async def run_request(
    client: httpx.AsyncClient,
    spec: RequestSpec,
    *,
    t0: float,
    scheduled_s: float,
    timeout_s: float,
    max_retries: int,
    budget: RetryBudget,
    rng: random.Random | None = None,
    secret: str | None = None,
) -> RequestResult:
    """Send one streamed request (retrying as allowed) and time it. Never raises except on cancel."""
    rng = rng or random.Random()
    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
    attempts = 0
    while True:
        attempts += 1
        sent = time.perf_counter()
        try:
            state = await _attempt(client, spec, timeout)
        except _Failure as failure:
            if failure.retryable and attempts <= max_retries:
                if budget.take():
                    wait = failure.retry_after_s
                    await asyncio.sleep(_backoff_s(attempts - 1, rng) if wait is None else wait)
                    continue
                cap = f" ({budget.cap})" if budget.cap is not None else ""
                failure.add(f"; not retried: the arm's retry cap{cap} is used up")
            elif failure.retryable and attempts > 1:
                failure.add(f" (after {attempts} attempts)")
            return RequestResult(
                **spec.result_fields(),
                scheduled_s=scheduled_s,
                sent_s=sent - t0,
                error_kind=failure.kind,
                error=_redact(str(failure), secret),
                http_status=failure.status,
                attempts=attempts,
            )
        return _result_from_state(spec, state, t0=t0, sent=sent, scheduled_s=scheduled_s, attempts=attempts)


def _result_from_state(
    spec: RequestSpec, state: _StreamState, *, t0: float, sent: float, scheduled_s: float, attempts: int
) -> RequestResult:
    # Timed from when the request was on the wire: time before that is client-side send lag.
    if state.on_wire is not None:
        sent = state.on_wire
    end = state.end_s if state.end_s is not None else time.perf_counter()
    figures = state.figures.figures()
    output_tokens = state.usage_tokens if state.usage_tokens is not None else state.timings_tokens
    estimated = output_tokens is None
    if estimated:
        output_tokens = len(state.chunk_times)
    chunk_tokens: list[int] | None = None
    if state.chunk_tokens and all(tokens is not None for tokens in state.chunk_tokens):
        chunk_tokens = [int(tokens or 0) for tokens in state.chunk_tokens]
    elif output_tokens == len(state.chunk_times) and not estimated:
        chunk_tokens = [1] * len(state.chunk_times)  # one token per chunk (llama.cpp)
    return RequestResult(
        **spec.result_fields(),
        scheduled_s=scheduled_s,
        sent_s=sent - t0,
        ttft_s=state.ttft_s - sent if state.ttft_s is not None else None,
        e2e_s=end - sent,
        chunk_times_s=[moment - sent for moment in state.chunk_times],
        chunk_chars=state.chunk_chars,
        chunk_tokens=chunk_tokens,
        output_tokens=output_tokens,
        prompt_tokens=state.prompt_tokens,
        usage_estimated=estimated,
        finish_reason=state.finish_reason,
        text="".join(state.text_parts),
        text_truncated=state.text_truncated,
        attempts=attempts,
        server=None if figures.empty else figures,
    )
