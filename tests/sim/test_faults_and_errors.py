"""Faults behave as documented; errors come in the OpenAI error shape."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.sim.conftest import client_for, scrape, scrape_until, value, write_vllm_config
from tui.sim.config import SimConfigError, SimStartupError, load_sim_config
from tui.sim.faults import FaultSettings
from tui.sim.server import SimServer
from tui.telemetry.logs import dispatch as log_dispatch


async def _complete(sim: SimServer, key: str = "unused", **body: Any) -> Any:
    """An openai-client completion of prompt "x" from `sim` (its model unless `body` names one)."""
    return await client_for(sim.base_url, key).completions.create(
        **{"model": sim.model, "prompt": "x", **body}
    )


async def test_error_rate_answers_500_in_openai_shape() -> None:
    async with SimServer(faults=FaultSettings(error_rate=1.0)) as sim:
        with pytest.raises(openai.InternalServerError) as caught:
            await _complete(sim, max_tokens=5)
        body = caught.value.body
        assert isinstance(body, dict) and body["code"] == 500 and body["type"] == "InternalServerError"
        sim.control(error_rate=0.0)
        result = await _complete(sim, max_tokens=5)
        assert result.usage is not None and result.usage.completion_tokens == 5


async def test_disconnect_mid_stream_and_request_is_aborted() -> None:
    async with SimServer(faults=FaultSettings(disconnect_rate=1.0)) as sim:
        stream = await client_for(sim.base_url).chat.completions.create(
            model=sim.model,
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=200,
            temperature=0,
            stream=True,
            extra_body={"ignore_eos": True},
        )
        received = 0
        with pytest.raises((openai.APIError, httpx.HTTPError)):
            async for _chunk in stream:
                received += 1
        assert 0 < received < 200
        page = await scrape_until(
            sim.base_url, lambda page: value(page, "vllm:request_success_total", finished_reason="abort") > 0
        )
        assert value(page, "vllm:request_success_total", finished_reason="abort") == 1
        assert value(page, "vllm:num_requests_running") == 0


async def test_slow_first_token_and_stalls_delay_tokens() -> None:
    async with SimServer(faults=FaultSettings(slow_first_token_s=0.4)) as sim:
        started = time.monotonic()
        stream = await _complete(sim, max_tokens=4, stream=True)
        async for _chunk in stream:
            break
        assert time.monotonic() - started >= 0.4
        page = await scrape(sim.base_url)
        assert value(page, "vllm:time_to_first_token_seconds_sum") >= 0.4
    async with SimServer(faults=FaultSettings(stall_every_s=0.05, stall_s=0.3)) as sim:
        started = time.monotonic()
        await _complete(sim, max_tokens=100, extra_body={"ignore_eos": True})
        assert time.monotonic() - started >= 0.3


async def test_garbage_metrics_and_counter_reset() -> None:
    async with SimServer() as sim:
        await _complete(sim, max_tokens=10)
        before = value(await scrape(sim.base_url), "vllm:generation_tokens_total")
        assert before == 10
        sim.control(reset_counters=True)
        assert value(await scrape(sim.base_url), "vllm:generation_tokens_total") == 0
        sim.control(garbage_metrics=True)
        async with httpx.AsyncClient() as client:
            text = (await client.get(sim.base_url + "/metrics")).text
        with pytest.raises(ValueError):
            list(text_string_to_metric_families(text))


async def test_malformed_body_unknown_model_and_bad_key() -> None:
    async with SimServer(api_key="sekrit") as sim, httpx.AsyncClient(base_url=sim.base_url) as client:
        auth = {"Authorization": "Bearer sekrit"}
        malformed = await client.post("/v1/completions", content=b"{not json", headers=auth)
        assert malformed.status_code == 400 and malformed.json()["error"]["code"] == 400
        missing = await client.post("/v1/chat/completions", json={"model": sim.model}, headers=auth)
        assert missing.status_code == 400 and missing.json()["error"]["param"] == "messages"
        with pytest.raises(openai.NotFoundError):
            await _complete(sim, "sekrit", model="no-such-model", max_tokens=2)
        with pytest.raises(openai.AuthenticationError):
            await _complete(sim, "wrong", max_tokens=2)
        assert (await client.get("/health")).status_code == 200  # health and metrics stay open
        assert (await client.get("/version")).json() == {"version": "0.28.0"}


async def test_startup_oom_from_an_over_ambitious_config(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "greedy.toml", k=6, gpu_memory_utilization=0.95)
    log = tmp_path / "server.log"
    sim = SimServer(config_path=config, log_path=log)
    with pytest.raises(SimStartupError, match="out of memory"):
        await sim.start()
    text = log.read_text()
    assert "torch.OutOfMemoryError: CUDA out of memory." in text
    assert "EngineCore failed to start." in text
    errors = [log_dispatch.parse_line(line, "vllm") for line in text.splitlines()]
    assert any(event is not None and event.kind == "error" for event in errors)  # spectop's grammar reads it
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(sim.base_url + "/health")
    # the same k with memory headroom starts fine
    write_vllm_config(config, k=6, gpu_memory_utilization=0.85)
    async with SimServer(config_path=config):
        pass


def test_bad_config_files_get_specific_errors(tmp_path: Path) -> None:
    bad_type = tmp_path / "a.toml"
    bad_type.write_text('[speculative]\nnum_speculative_tokens = "two"\n')
    with pytest.raises(SimConfigError, match=r"a\.toml: field 'num_speculative_tokens': expected int"):
        load_sim_config(bad_type)
    bad_json = tmp_path / "b.json"
    bad_json.write_text('{"tp_size": 8,\n "oops"}')
    with pytest.raises(SimConfigError, match=r"b\.json: line 2"):
        load_sim_config(bad_json)
    bad_sim = tmp_path / "c.toml"
    bad_sim.write_text("[sim]\nacceptance = [0.5, 1.5]\n")
    with pytest.raises(SimConfigError, match="acceptance"):
        load_sim_config(bad_sim)


async def test_periodic_counter_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    import tui.sim.metrics_sglang as sglang_metrics

    # No idle republish until the figures after the request are read (a loaded machine may take longer
    # than any short interval to scrape), then one every 0.4 s.
    monkeypatch.setattr(sglang_metrics, "IDLE_REPUBLISH_S", 3600.0)
    async with SimServer(flavor="sglang", decode_log_interval=5) as sim:
        # ignore_eos: an unseeded sampled request ends at EOS before 60 tokens about once in 40.
        await _complete(sim, max_tokens=60, extra_body={"ignore_eos": True})
        page = await scrape(sim.base_url)
        assert value(page, "sglang:generation_tokens_total") == 60
        assert value(page, "sglang:gen_throughput") > 0
        monkeypatch.setattr(sglang_metrics, "IDLE_REPUBLISH_S", 0.4)
        # Idle: SGLang re-publishes gen_throughput as 0, spec gauges stay. Waited for, not slept: on a
        # loaded machine the republish timer runs late.
        page = await scrape_until(sim.base_url, lambda page: value(page, "sglang:gen_throughput") == 0)
        assert value(page, "sglang:spec_accept_length") > 1
        sim.control(counter_reset_every_s=0.5)
        await scrape_until(sim.base_url, lambda page: value(page, "sglang:generation_tokens_total") == 0)
