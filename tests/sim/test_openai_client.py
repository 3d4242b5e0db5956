"""The official openai client talks to every flavour: chat and completions, streaming and not, usage exact;
/health and the flavour-specific endpoints answer in the real servers' shapes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sim.conftest import client_for, post_all, until
from tui.sim.server import SimServer
from tui.sim.tokens import count_tokens

FLAVORS = ["vllm", "sglang", "llamacpp"]


@pytest.mark.parametrize("flavor", FLAVORS)
async def test_chat_and_completions_streaming_and_not(flavor: str) -> None:
    async with SimServer(flavor=flavor) as sim:
        client = client_for(sim.base_url)
        models = await client.models.list()
        model = models.data[0].id
        assert model == sim.model and models.data[0].owned_by == flavor
        async with httpx.AsyncClient(base_url=sim.base_url) as http:
            health = await http.get("/health")
        health_body = b'{"status":"ok"}' if flavor == "llamacpp" else b""
        assert (health.status_code, health.content) == (200, health_body)
        messages = [{"role": "user", "content": "Explain speculative decoding in two sentences."}]
        ask = {"model": model, "messages": messages, "max_tokens": 40, "temperature": 0}
        full = await client.chat.completions.create(**ask)
        assert full.usage is not None
        assert full.usage.completion_tokens == 40
        assert full.usage.total_tokens == full.usage.prompt_tokens + 40
        assert full.choices[0].finish_reason == "length"
        assert count_tokens(full.choices[0].message.content or "") == 40

        stream = await client.chat.completions.create(
            **ask, stream=True, stream_options={"include_usage": True}
        )
        text, chunks, usage, finish = "", 0, None, None
        async for chunk in stream:
            if chunk.usage is not None:
                assert chunk.choices == []
                usage = chunk.usage
            for choice in chunk.choices:
                chunks += 1
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
        assert usage is not None and usage.completion_tokens == 40
        assert usage.prompt_tokens == full.usage.prompt_tokens
        assert text == full.choices[0].message.content  # greedy: same text streamed or not
        assert finish == "length"
        if flavor == "llamacpp":
            assert chunks >= 40  # one chunk per token
        else:
            assert chunks < 40  # a chunk carries every token of an engine step

        code = {"model": model, "prompt": "def add(a, b):", "max_tokens": 12, "temperature": 0}
        completion = await client.completions.create(**code)
        assert completion.usage is not None and completion.usage.completion_tokens == 12
        assert completion.usage.prompt_tokens == count_tokens("def add(a, b):")
        streamed = await client.completions.create(**code, stream=True)
        pieces = [choice.text async for chunk in streamed for choice in chunk.choices]
        assert "".join(pieces) == completion.choices[0].text


async def test_temperature_varies_with_seed_and_stop_strings() -> None:
    async with SimServer() as sim:
        client = client_for(sim.base_url)

        async def ask(**kwargs: object) -> str:
            result = await client.completions.create(
                model=sim.model, prompt="Tell me a story", max_tokens=30, **kwargs
            )  # type: ignore[call-overload]
            return result.choices[0].text

        assert await ask(temperature=0.8, seed=1) == await ask(temperature=0.8, seed=1)
        assert await ask(temperature=0.8, seed=1) != await ask(temperature=0.8, seed=2)
        full = await ask(temperature=0)
        marker = full.split()[3]
        cut = await client.completions.create(
            model=sim.model, prompt="Tell me a story", max_tokens=30, temperature=0, stop=[marker]
        )
        assert cut.choices[0].finish_reason == "stop"
        assert marker not in cut.choices[0].text
        assert full.startswith(cut.choices[0].text)


async def test_llamacpp_slots_show_drafting_and_sglang_server_info() -> None:
    async with SimServer(flavor="llamacpp") as sim, httpx.AsyncClient(base_url=sim.base_url) as client:
        body = {"prompt": "x", "max_tokens": 400, "ignore_eos": True}
        job = asyncio.create_task(post_all(sim.base_url, "/v1/completions", [body]))

        async def busy_slots() -> list[dict[str, Any]] | None:
            slots = (await client.get("/slots")).json()
            return slots if any(slot["is_processing"] for slot in slots) or job.done() else None

        slots = await until(busy_slots, "the request never went into a slot")
        assert slots[0]["speculative"] is True
        assert sum(slot["is_processing"] for slot in slots) == 1
        props = (await client.get("/props")).json()
        assert props["default_generation_settings"]["params"]["speculative.types"] == "none"
        await job
    config = Path("sample_configs/sglang_settings.json")
    async with (
        SimServer(flavor="sglang", config_path=config) as sim,
        httpx.AsyncClient(base_url=sim.base_url) as client,
    ):
        info = (await client.get("/server_info")).json()
        assert info["speculative_num_steps"] == 3 and info["speculative_num_draft_tokens"] == 4
        assert info["tp_size"] == 8
