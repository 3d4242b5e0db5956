"""The simulator honours vLLM's k-by-batch-size table: each step drafts the k of the
running batch size, as the per-request `per_step_drafted` and the draft counters show."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sim.conftest import scrape, value, write_vllm_config
from tui.sim.config import SimConfigError, load_sim_config
from tui.sim.per_request import ResponseOptions
from tui.sim.server import SimServer

TABLE = "num_speculative_tokens_per_batch_size = [[1, 1, 3], [2, 64, 1]]"


def _config(tmp_path: Path, table: str = TABLE) -> Path:
    path = write_vllm_config(tmp_path / "config.toml", k=3, sim="content_effect = 0.0\nspeed = 4.0")
    text = path.read_text(encoding="utf-8").replace(
        "num_speculative_tokens = 3\n", f"num_speculative_tokens = 3\n{table}\n"
    )
    path.write_text(text, encoding="utf-8")
    return path


async def _specs(base_url: str, requests: int) -> list[dict[str, Any]]:
    async def one(client: httpx.AsyncClient, index: int) -> dict[str, Any]:
        body = {
            "messages": [{"role": "user", "content": f"Request {index}: explain prefix caches."}],
            "max_tokens": 60, "temperature": 0, "ignore_eos": True,
        }  # fmt: skip
        response = await client.post(base_url + "/v1/chat/completions", json=body)
        response.raise_for_status()
        return response.json()["metrics"]["speculative_decoding"]

    async with httpx.AsyncClient(timeout=30.0) as client:
        return list(await asyncio.gather(*(one(client, index) for index in range(requests))))


async def test_each_step_drafts_the_k_of_its_batch_size(tmp_path: Path) -> None:
    options = ResponseOptions(spec_metrics="detailed")
    async with SimServer(flavor="vllm", config_path=_config(tmp_path), responses=options) as sim:
        (alone,) = await _specs(sim.base_url, 1)
        before = await scrape(sim.base_url)
        together = await _specs(sim.base_url, 8)
        after = await scrape(sim.base_url)
    assert alone["num_spec_tokens"] == 3  # vLLM reports the configured maximum here
    assert set(alone["per_step_drafted"]) == {3}  # batch 1: the first range's k
    drafted = [k for spec in together for k in spec["per_step_drafted"]]
    assert set(drafted) <= {1, 3} and drafted.count(1) > len(drafted) / 2  # batch 2-8: k=1
    assert all(spec["num_draft_tokens"] == sum(spec["per_step_drafted"]) for spec in together)

    def delta(name: str) -> float:
        return value(after, name) - value(before, name)

    assert delta("vllm:spec_decode_num_draft_tokens_total") == len(drafted) + 2 * drafted.count(3)


def test_the_table_is_read_as_vllm_reads_it(tmp_path: Path) -> None:
    config = load_sim_config(
        _config(tmp_path, 'num_speculative_tokens_per_batch_size = {"1-4" = 5, "9-16" = 0}')
    )
    # k clamped to num_speculative_tokens = 3; batch 5-8 (a gap) and beyond 16 inherit the previous k
    assert [config.k_at(batch) for batch in (1, 4, 5, 8, 9, 16, 40)] == [3, 3, 3, 3, 0, 0, 0]
    assert load_sim_config(_config(tmp_path, "")).k_at(40) == 3
    data_parallel = _config(tmp_path, "num_speculative_tokens_per_batch_size = [[1, 4, 0]]")
    text = data_parallel.read_text(encoding="utf-8").replace("[model]\n", "[model]\ndata_parallel_size = 2\n")
    data_parallel.write_text(text, encoding="utf-8")
    assert load_sim_config(data_parallel).k_at(1) == 3  # vLLM turns the table off with data parallel > 1


@pytest.mark.parametrize(
    ("table", "words"),
    [("[[1, 8, 2], [4, 16, 1]]", "overlap"), ("[[2, 8, 2]]", "not 1"), ("[[1, 8]]", "expected [lo, hi, k]")],
)
def test_a_table_vllm_refuses_stops_the_simulator(tmp_path: Path, table: str, words: str) -> None:
    with pytest.raises(SimConfigError, match=words.replace("[", r"\[")):
        load_sim_config(_config(tmp_path, f"num_speculative_tokens_per_batch_size = {table}"))
