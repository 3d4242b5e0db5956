"""A small client of the Prometheus HTTP API (instant and range queries). Everything it
answers is untrusted (size-capped, checked); every failure raises `PrometheusError` with a short text;
secrets come from the environment variables the settings name and go into headers only."""

from __future__ import annotations

import asyncio
import json
import math
import os
from typing import Annotated, Any, Literal, NotRequired
from urllib.parse import urlencode

import httpx
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from tui.auth import api_key_from_env, bearer_headers
from tui.format import fmt_setting
from tui.settings import PrometheusSettings
from tui.telemetry.scraper import _connect_error_text, _size_text

DEFAULT_MAX_BYTES = 32 * 2**20
_STALE_CONNECTION = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


class PrometheusError(Exception):
    """Prometheus could not answer a request; str() is the text the dashboard shows."""


class _Response(BaseModel):
    """The envelope of every /api/v1 answer."""

    status: Literal["success", "error"]
    data: Any = None
    errorType: str | None = None
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)


class RangeSeries(BaseModel):
    """One series of a range vector (matrix)."""

    metric: dict[str, str] = Field(default_factory=dict)
    values: list[tuple[float, str]] = Field(default_factory=list)


class SampleJson(TypedDict):
    """One instant-vector sample as the API's JSON has it: labels (maybe missing) and [time, "value"]."""

    metric: NotRequired[dict[str, str]]
    value: tuple[float, str]


class _VectorJson(TypedDict):
    resultType: Literal["vector"]
    result: list[SampleJson]


class _ScalarJson(TypedDict):
    resultType: Literal["scalar"]
    result: tuple[float, str]


_QueryData = Annotated[_VectorJson | _ScalarJson, Field(discriminator="resultType")]


class _QueryJson(TypedDict):
    """A successful instant query's answer, validated from the bytes at once (else `_envelope`)."""

    status: Literal["success"]
    data: _QueryData


_QUERY_ANSWER = TypeAdapter(_QueryJson)
_QUERY_DATA: TypeAdapter[_VectorJson | _ScalarJson] = TypeAdapter(_QueryData)


def _vector(data: _VectorJson | _ScalarJson) -> list[SampleJson]:
    """The samples of an instant query's data as its JSON objects; a scalar as one sample without labels."""
    if data["resultType"] == "scalar":
        return [{"metric": {}, "value": data["result"]}]
    return data["result"]


class _Matrix(BaseModel):
    resultType: Literal["matrix"]
    result: list[RangeSeries]


def number(text: str) -> float | None:
    """A Prometheus sample value ("1.5", "NaN", "+Inf") as a finite float, else None (never 0)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _envelope(status: int, body: bytes) -> _Response:
    """The API's envelope of an answer, or a `PrometheusError` saying what is wrong with it."""
    try:
        answer = _Response.model_validate(json.loads(body.decode("utf-8", errors="replace")))
    except (ValueError, ValidationError):
        if status >= 300:  # an error page, or a redirect (to a login page): not followed
            raise PrometheusError(f"Prometheus: HTTP {status}") from None
        raise PrometheusError("Prometheus: the answer is not Prometheus API JSON") from None
    if answer.status == "error":
        kind = answer.errorType or f"HTTP {status}"
        text = (answer.error or "no message")[:300]
        raise PrometheusError(f"Prometheus error ({kind}): {text}")
    if status >= 400:
        raise PrometheusError(f"Prometheus: HTTP {status}")
    return answer


class PrometheusClient:
    """One Prometheus server (`async with`); `requests` counts the HTTP requests sent."""

    def __init__(self, settings: PrometheusSettings, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.settings = settings
        self.base_url = settings.url.rstrip("/")
        self.timeout_s = settings.timeout_s
        self.max_bytes = max_bytes
        self.requests = 0
        self._headers = {"Accept": "application/json"}
        if settings.bearer_token_env:
            self._headers.update(bearer_headers(api_key_from_env(settings.bearer_token_env)))
        user, password = settings.basic_auth_user, os.environ.get(settings.basic_auth_password_env or "", "")
        auth = None if user is None else httpx.BasicAuth(user, password)
        self._http = httpx.AsyncClient(verify=settings.tls_verify, auth=auth)

    def missing_secrets(self) -> list[str]:
        """Names of environment variables the settings name but that are not set (never their values)."""
        names = [self.settings.bearer_token_env, self.settings.basic_auth_password_env]
        return [name for name in names if name and not os.environ.get(name)]

    async def __aenter__(self) -> PrometheusClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _read(self, path: str, params: list[tuple[str, str]]) -> tuple[int, bytes]:
        # A POST form: long PromQL does not fit a URL.
        async with self._http.stream(
            "POST",
            f"{self.base_url}{path}",
            content=urlencode(params).encode("ascii"),
            headers={**self._headers, "Content-Type": "application/x-www-form-urlencoded"},
            timeout=self.timeout_s,
        ) as response:
            declared = response.headers.get("content-length")
            too_large = f"Prometheus answer larger than {_size_text(self.max_bytes)}"
            if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
                raise PrometheusError(too_large)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_bytes:
                    raise PrometheusError(too_large)
            return response.status_code, bytes(body)

    async def _fetch(self, path: str, params: list[tuple[str, str]]) -> tuple[int, bytes]:
        """The HTTP status and body of one request; every transport failure as a `PrometheusError`."""
        self.requests += 1
        try:
            async with asyncio.timeout(self.timeout_s):
                try:
                    status, body = await self._read(path, params)
                except _STALE_CONNECTION:
                    # A kept-alive connection the server closed (e.g. Prometheus restarted): once more.
                    status, body = await self._read(path, params)
        except (TimeoutError, httpx.TimeoutException):
            raise PrometheusError(f"Prometheus timeout after {fmt_setting(self.timeout_s)} s") from None
        except httpx.ConnectError as error:
            raise PrometheusError(f"Prometheus unreachable: {_connect_error_text(error)}") from None
        except _STALE_CONNECTION as error:
            raise PrometheusError(f"Prometheus: connection lost ({type(error).__name__})") from None
        except httpx.HTTPError as error:
            raise PrometheusError(f"Prometheus: {type(error).__name__}") from None
        except OSError as error:
            why = error.strerror or type(error).__name__
            raise PrometheusError(f"Prometheus: network error: {why}") from None
        return status, body

    async def query_vector(self, expr: str, at: float | None = None) -> list[SampleJson]:
        """An instant query's samples as validated JSON objects; a scalar as one sample without labels."""
        params = [
            ("query", expr),
            *([("time", f"{at:.3f}")] if at is not None else []),
            ("timeout", f"{self.timeout_s:g}s"),
        ]
        status, body = await self._fetch("/api/v1/query", params)
        if status < 300:
            try:
                return _vector(_QUERY_ANSWER.validate_json(body)["data"])
            except ValidationError:
                pass  # the general way says what is wrong
        answer = _envelope(status, body)
        try:
            return _vector(_QUERY_DATA.validate_python(answer.data if isinstance(answer.data, dict) else {}))
        except ValidationError:
            raise PrometheusError(f"Prometheus: unexpected answer to {expr[:60]!r}") from None

    async def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[RangeSeries]:
        params = [("query", expr), ("start", f"{start:.3f}"), ("end", f"{end:.3f}"), ("step", f"{step_s:g}")]
        params.append(("timeout", f"{self.timeout_s:g}s"))
        answer = _envelope(*await self._fetch("/api/v1/query_range", params))
        try:
            return _Matrix.model_validate(answer.data).result
        except ValidationError:
            raise PrometheusError(f"Prometheus: unexpected answer to {expr[:60]!r}") from None
