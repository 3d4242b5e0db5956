"""The burst session: one validation of a request, live / past arms, client settings.json, cancel, save."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from timed_server import Behaviour, TimedServer

from tests.bench.bursts import verdict_body
from tui.bench.burst_store import list_bursts
from tui.bench.client_settings import (
    ClientSettings,
    ClientSettingsError,
    load_client_settings,
    parse_client_settings,
)
from tui.bench.engine import BurstProgress
from tui.bench.report.models import ArmSummary, BurstSummary
from tui.bench.session import (
    BurstCancelled,
    BurstRequest,
    BurstRequestError,
    BurstSession,
    EndpointArm,
    PastArm,
)
from tui.paths import sample_configs_dir

SLOW = Behaviour(ttft_s=0.01, interval_s=0.01, chunks=8)
FAST = Behaviour(ttft_s=0.01, interval_s=0.01, chunks=4, tokens_per_chunk=2)


def _arm(server: TimedServer, name: str = "srv") -> EndpointArm:
    return EndpointArm(name=name, base_url=server.base_url, model="m")


def _request(**values: Any) -> BurstRequest:
    return BurstRequest.parse({"requests": 4, "warmup": 0, "rounds": 1, "scrape_metrics": False, **values})


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"requests": "abc"}, "requests", "expected a whole number, got 'abc'"),
        ({"requests": "0"}, "requests", "must be at least 1, got 0"),
        ({"rounds": 0}, "rounds", "must be at least 1, got 0"),
        ({"warmup": -1}, "warmup", "must be at least 0, got -1"),
        ({"rate": "0"}, "rate", "must be greater than 0.0, got 0"),
        ({"temperature": "hot"}, "temperature", "expected a number, got 'hot'"),
        ({"arrival": "burst"}, "arrival", "expected one of 'poisson' or 'constant', got 'burst'"),
        ({"a": EndpointArm(name="x", base_url="ftp://h")}, "a", "expected an http:// or https:// URL"),
        ({"api_key_env": "sk-live-123"}, "api_key_env", "expected the NAME of an environment variable"),
    ],
)
def test_one_validation_names_the_field_in_spectops_words(
    values: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(BurstRequestError) as raised:
        BurstRequest.parse(values)
    assert raised.value.field == field
    assert raised.value.message.startswith(message)
    assert raised.value.described({field: "--flag"}).startswith(f"--flag: {message}")


async def test_client_settings_fill_what_the_request_leaves_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSION_TEST_KEY", "sk-session-secret")
    settings = tmp_path / "settings.json"
    with TimedServer(FAST) as server:
        values = {"base_url": "http://127.0.0.1:9", "api_key_env": "SESSION_TEST_KEY", "max_tokens": 5}
        values |= {"temperature": 0.5, "extra_body": {"top_k": 7}}
        settings.write_text(json.dumps(values), encoding="utf-8")
        request = _request(a=_arm(server), client_settings=str(settings), temperature="0")
        outcome = await BurstSession(request).run()  # a client of its own, sized for the burst
        bodies = [record.body for record in server.records]
        keys = {record.headers.get("authorization") for record in server.records}
    assert {body["max_tokens"] for body in bodies} == {5}  # not given: the client settings'
    assert {body["temperature"] for body in bodies} == {0.0}  # given: the request's
    assert {body["top_k"] for body in bodies} == {7}
    assert keys == {"Bearer sk-session-secret"}
    assert outcome.ran is not None and outcome.ran.settings.max_tokens == 5


async def test_a_live_b_against_a_past_a_runs_on_the_past_prompts_and_is_compared(
    client: httpx.AsyncClient,
) -> None:
    with TimedServer(SLOW) as before_server:
        first = BurstSession(_request(a=_arm(before_server, "before"), prompts="code-en"), client)
        await first.run()
        kept = first.save()
    assert kept is not None
    progress: list[BurstProgress] = []
    with TimedServer(FAST) as after_server:
        request = _request(a=PastArm(path=kept), b=_arm(after_server, "after"), prompts="chat-en")
        session = BurstSession(request, client)
        outcome = await session.run(on_progress=progress.append)
    assert outcome.ran is not None and outcome.ran.settings.prompt_set == "code-en"  # the past burst's
    assert [arm.name for arm in outcome.result.arms] == ["before", "after"]
    assert {arm.label for p in progress for arm in p.arms} == {"b"}  # shown as the side it is on
    summary = outcome.summary
    assert isinstance(summary, BurstSummary) and isinstance(summary.b, ArmSummary)
    assert summary.comparison is not None
    assert verdict_body(summary.comparison.verdict).startswith("after is"), summary.comparison.verdict
    assert summary.equivalence is not None and summary.equivalence.identical == 4
    assert session.save() is not None
    assert len(list_bursts()) == 2  # the live burst is kept as it ran, not the combination


async def test_the_cancel_event_closes_every_request_and_keeps_nothing(client: httpx.AsyncClient) -> None:
    stalled = Behaviour(ttft_s=0.0, interval_s=0.0, chunks=10, stall_after_chunks=2)
    cancel = asyncio.Event()
    with TimedServer(stalled) as server:
        session = BurstSession(_request(a=_arm(server), concurrency=4), client)
        running = asyncio.ensure_future(session.run(cancel=cancel))
        while len(server.records) < 4:
            await asyncio.sleep(0.01)
        cancel.set()
        with pytest.raises(BurstCancelled):
            # Against the stalled streams' own timeout (a ratio, not a wall-clock limit): closed at once.
            await asyncio.wait_for(running, timeout=ClientSettings().timeout / 10)
    assert session.outcome is None and session.save() is None
    assert list_bursts() == []


def test_sample_client_settings_and_defaults() -> None:
    settings = load_client_settings(sample_configs_dir() / "client_settings.json")
    assert settings.api_key_env == "SPECTOP_API_KEY"
    assert settings.timeout == 120 and settings.max_retries == 2
    assert settings.extra_body == {"top_p": 0.95, "repetition_penalty": 1.05}
    settings = parse_client_settings('{"base_url": "http://h:8000/v1", "temperature": 0.7}')
    assert settings.temperature == 0.7  # what the file leaves out: the defaults
    assert (settings.timeout, settings.max_retries) == (120.0, 2)
    assert (settings.max_tokens, settings.stream) == (512, True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"base_url": "http://h:8000/v1", "max_retries": 50}', "field max_retries"),
        ('{"base_url": "http://h:8000/v1", "api_key_env": "sk-abc123-xyz"}', "NAME of an environment"),
        ('{"base_url": "localhost:8000"}', "field base_url"),
        ('{"base_url": "http://h:8000/v1", "timeot": 5}', "field timeot: not a client setting"),
        ('{"timeout": 5}', "field base_url"),
        ('{\n  "a": ,\n}', "line 2"),
        ("[]", "JSON object"),
    ],
)
def test_bad_settings_name_the_field(text: str, expected: str) -> None:
    with pytest.raises(ClientSettingsError, match=expected):
        parse_client_settings(text, "s.json")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ClientSettingsError, match="cannot read"):
        load_client_settings(tmp_path / "nope.json")
