"""One streamed request: parsing real streams, tokens, errors by kind, bounded retries, redirects; the sharded
transport behind `spectop bench`'s client."""

from __future__ import annotations

import asyncio
import ssl
import time

import httpx
import pytest
from timed_server import Behaviour, TimedServer

from tui.bench.request import MAX_RETRY_AFTER_S, RequestSpec, RetryBudget, endpoint_url, run_request
from tui.bench.transport import ShardedTransport, burst_client

CHUNK = b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n'


def _spec(url: str, api: str = "chat", headers: dict[str, str] | None = None) -> RequestSpec:
    prompt = {"messages": [{"role": "user", "content": "hi"}]} if api == "chat" else {"prompt": "hi"}
    body = {"model": "m", "max_tokens": 16, "stream": True, **prompt}
    return RequestSpec(endpoint_url(url, api), body, headers or {}, arm="a", index=0, round=0, prompt_id="p0")


async def _run(client: httpx.AsyncClient, spec: RequestSpec, **kwargs: object):
    options: dict[str, object] = {"timeout_s": 5.0, "max_retries": 0, "budget": RetryBudget(10)}
    options.update(kwargs)
    return await run_request(client, spec, t0=time.perf_counter(), scheduled_s=0.0, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("base", "api", "expected"),
    [
        ("http://h:8000", "chat", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/", "completions", "http://h:8000/v1/completions"),
        ("http://h:8000/v1", "chat", "http://h:8000/v1/chat/completions"),
        ("http://h/api/v1/", "completions", "http://h/api/v1/completions"),
        ("http://h:8000/v1/chat/completions", "chat", "http://h:8000/v1/chat/completions"),
    ],
)
def test_endpoint_url(base: str, api: str, expected: str) -> None:
    assert endpoint_url(base, api) == expected


async def test_several_tokens_per_chunk_counted_from_usage(client: httpx.AsyncClient) -> None:
    with TimedServer(Behaviour(ttft_s=0.0, interval_s=0.0, chunks=4, tokens_per_chunk=3)) as server:
        result = await _run(client, _spec(server.base_url, api="completions"))
    assert result.output_tokens == 12 and result.tokens_per_chunk == 3
    assert result.chunk_tokens is None  # not said per chunk by the server


async def test_connect_error(client: httpx.AsyncClient) -> None:
    with TimedServer() as server:
        url = server.base_url
    result = await _run(client, _spec(url))
    assert result.error_kind == "connect"
    assert result.ttft_s is None and result.decode_tokens_per_s is None


async def test_http_status_not_retried_for_400(client: httpx.AsyncClient) -> None:
    with TimedServer(Behaviour(status=400)) as server:
        result = await _run(client, _spec(server.base_url), max_retries=3)
        assert len(server.records) == 1
    assert result.error_kind == "http_status" and result.http_status == 400 and result.attempts == 1
    assert "status 400 as asked" in (result.error or "")


@pytest.mark.parametrize(("status", "retry_after"), [(503, None), (429, "0")])
async def test_retries_bounded_per_request_and_by_budget(
    client: httpx.AsyncClient, status: int, retry_after: str | None
) -> None:
    with TimedServer(Behaviour(status=status, retry_after=retry_after)) as server:
        one = await _run(client, _spec(server.base_url), max_retries=2)
        assert one.attempts == 3 and len(server.records) == 3
        budget = RetryBudget(2)
        results = await asyncio.gather(
            *(_run(client, _spec(server.base_url), max_retries=5, budget=budget) for _ in range(6))
        )
        assert len(server.records) == 3 + 6 + 2  # six first tries, two retries from the budget
    assert all(r.error_kind == "http_status" and r.http_status == status for r in [one, *results])


async def test_read_timeout(client: httpx.AsyncClient) -> None:
    with TimedServer(Behaviour(ttft_s=0.0, interval_s=0.0, stall_after_chunks=2)) as server:
        result = await _run(client, _spec(server.base_url), timeout_s=0.3)
        assert result.attempts >= 1 and len(server.records) == result.attempts
    assert result.error_kind == "timeout"  # the stalled stream never ends: only the timeout ends it


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        (Behaviour(ttft_s=0.0, interval_s=0.0, break_after_chunks=3), ""),
        (Behaviour(ttft_s=0.0, interval_s=0.0, error_in_stream_after=2), "engine died"),
    ],
    ids=["connection-closed", "error-event"],
)
async def test_a_stream_that_breaks_is_a_broken_stream_never_retried(
    client: httpx.AsyncClient, behaviour: Behaviour, said: str
) -> None:
    with TimedServer(behaviour) as server:
        result = await _run(client, _spec(server.base_url), max_retries=3)
    assert result.error_kind == "broken_stream" and said in (result.error or "")
    assert result.attempts == 1  # a stream that started is never retried


@pytest.mark.parametrize(
    ("stream", "said"),
    [
        (b'data: {"choices": [\n\ndata: [DONE]\n\n', "invalid JSON"),
        (CHUNK, ""),  # cut before [DONE]
    ],
    ids=["invalid-json", "no-done"],
)
async def test_a_malformed_stream_is_a_broken_stream(stream: bytes, said: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=stream)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        result = await _run(client, _spec("http://x"))
    assert result.error_kind == "broken_stream" and said in (result.error or "")


async def test_api_key_sent_as_bearer_and_redacted_from_errors(client: httpx.AsyncClient) -> None:
    secret = "sk-test-SECRET-123456"

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == f"Bearer {secret}"
        return httpx.Response(401, json={"error": {"message": f"bad key {secret}"}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as mock:
        result = await _run(
            mock, _spec("http://x", headers={"Authorization": f"Bearer {secret}"}), secret=secret
        )
    assert result.error_kind == "http_status" and secret not in result.model_dump_json()


async def test_connection_dropped_before_a_response_is_retried() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise httpx.RemoteProtocolError("Server disconnected", request=request)
        return httpx.Response(200, content=CHUNK + b"data: [DONE]\n\n")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        result = await _run(client, _spec("http://x"), max_retries=2)
    assert result.ok and result.attempts == 2 and calls == 2


@pytest.mark.parametrize("retry_after", ["3600", "http-date+7200"])
async def test_huge_retry_after_fails_at_once_with_a_clear_error(
    client: httpx.AsyncClient, retry_after: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded_sleep(delay: float, *args: object) -> object:
        waits.append(delay)
        return await real_sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", recorded_sleep)
    with TimedServer(Behaviour(status=429, retry_after=retry_after)) as server:
        result = await _run(client, _spec(server.base_url), max_retries=2)
        assert len(server.records) == 1
    assert max(waits, default=0.0) < 1.0  # neither the asked hour nor a capped wait was slept
    assert result.error_kind == "http_status" and result.http_status == 429 and result.attempts == 1
    assert f"more than the {MAX_RETRY_AFTER_S:g} s" in (result.error or "")
    assert "not retried" in (result.error or "")


@pytest.mark.parametrize(
    ("status", "secret", "said"),
    [(302, "sk-redirect-NEVER-FORWARD", " (it would carry the API key)"), (307, None, "")],
)
async def test_a_redirect_is_named_and_not_followed_even_by_a_client_that_follows_them(
    status: int, secret: str | None, said: str
) -> None:
    headers = {"Authorization": f"Bearer {secret}"} if secret else None
    with TimedServer(Behaviour(ttft_s=0.0, interval_s=0.0, chunks=3)) as elsewhere:
        target = elsewhere.base_url + "/v1/chat/completions"
        with TimedServer(Behaviour(redirect_to=target, redirect_status=status)) as server:
            async with httpx.AsyncClient(follow_redirects=True) as following:
                spec = _spec(server.base_url, headers=headers)
                result = await _run(following, spec, max_retries=2, secret=secret)
            assert len(server.records) == 1  # a redirect is not retried either
        assert elsewhere.records == []  # the POST (and the key) never went to the other host
    assert result.error_kind == "http_status" and result.http_status == status
    assert result.error == f"redirected ({status}) to {target}; not followed{said}"


def test_shards_cover_the_connections_asked_for() -> None:
    transport = ShardedTransport(72, streams_per_shard=16)
    assert len(transport._shards) == 5
    assert transport.max_connections >= 72


async def test_streams_spread_over_shards_and_are_released() -> None:
    with TimedServer(Behaviour(ttft_s=0.05, interval_s=0.01, chunks=5)) as server:
        async with burst_client(32) as client:
            transport = client._transport
            assert isinstance(transport, ShardedTransport)
            peak: list[int] = []

            async def one() -> None:
                async with client.stream("POST", f"{server.base_url}/v1/completions", json={}) as response:
                    peak.append(max(transport._busy))
                    async for _ in response.aiter_bytes():
                        pass

            await asyncio.gather(*(one() for _ in range(32)))
            assert max(peak) <= 16  # least-busy placement: no shard above its size
            assert transport._busy == [0] * len(transport._busy)


async def test_every_pool_shares_one_tls_context_made_when_first_needed() -> None:
    # 10 pools loading the CA bundle each took 0.3 s before the dashboard's first frame.
    assert ShardedTransport(32)._tls is not None  # a burst client: at once, no measured request waits
    transport = ShardedTransport(32, tls_at_first_request=True)
    assert transport._tls is None and transport._shards == [None, None]
    with TimedServer(Behaviour(ttft_s=0.05, interval_s=0.01, chunks=2)) as server:
        async with httpx.AsyncClient(transport=transport) as client:

            async def one() -> None:
                async with client.stream("POST", f"{server.base_url}/v1/completions", json={}) as response:
                    async for _ in response.aiter_bytes():
                        pass

            await asyncio.gather(*(one() for _ in range(24)))  # more than one pool holds
            # Plain http:// (the dashboard's first scrape): no CA bundle loaded, before its frame or after.
            assert transport._tls is None and transport._tls_made is None
            plain = [shard for shard in transport._plain if shard is not None]
            assert len(plain) == 2
            no_tls = transport._no_tls
            assert {id(shard._pool._ssl_context) for shard in plain} == {id(no_tls)}
            # Were it ever used, it fails closed: certificates and host names required, no CA trusted.
            assert no_tls is not None and no_tls.verify_mode == ssl.CERT_REQUIRED and no_tls.check_hostname
            assert no_tls.cert_store_stats()["x509_ca"] == 0

            async def secure() -> None:
                with pytest.raises(httpx.ConnectError):  # nothing listens: TLS context made, then refused
                    await client.get("https://127.0.0.1:9/metrics")

            await asyncio.gather(*(secure() for _ in range(24)))
    assert transport._tls is not None and transport._tls.cert_store_stats()["x509_ca"] > 0
    shards = [shard for shard in transport._shards if shard is not None]
    assert len(shards) == 2
    assert {id(shard._pool._ssl_context) for shard in shards} == {id(transport._tls)}
