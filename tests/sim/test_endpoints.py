"""Flavour-specific endpoints answer in the real servers' shapes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.sim.conftest import post_all, until
from tui.sim.server import SimServer


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
