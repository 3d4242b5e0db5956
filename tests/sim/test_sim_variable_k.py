"""Steps that draft different lengths. vLLM's k-by-batch-size table: each step drafts the k of the running
batch size, as `per_step_drafted` and the draft counters show. SGLang's adaptive steps: each step drafts the
current tier, which follows the EMA of accepted drafts with hysteresis after warmup; `sglang:spec_num_steps`
and the per-request figures show it; native /generate gives the drafts counts and histogram when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sim.conftest import chat_bodies, generate_body, grew, post_all, scrape, value, write_vllm_config
from tui.bench.server_figures import figures_from_body
from tui.sim.behaviour import AdaptiveSteps
from tui.sim.config import SimConfigError, load_sim_config
from tui.sim.per_request import ResponseOptions
from tui.sim.server import SimServer

FAST = {"ema_alpha": 0.5, "warmup_batches": 2, "update_interval": 2}


def _settings(tmp_path: Path, adaptive: dict[str, Any] | None, acceptance: float) -> Path:
    if adaptive is not None:
        (tmp_path / "adaptive.json").write_text(json.dumps(adaptive), encoding="utf-8")
    settings = {
        "model_path": "deepseek-ai/DeepSeek-V3",
        "mem_fraction_static": 0.8,  # room for the drafts of the largest tier
        "speculative_algorithm": "EAGLE",
        "speculative_eagle_topk": 1,
        "speculative_adaptive": True,
        **({"speculative_adaptive_config": "adaptive.json"} if adaptive is not None else {}),
        "sim": {
            "acceptance": [acceptance] * 8,
            "content_effect": 0.0,
            "speed": 4.0,
            "decode_log_interval": 4,
        },
    }
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("accepted", "steps"),
    [(3, [3, 7, 7, 7]), (0, [3, 1, 1, 1]), (2, [3, 3, 3, 3])],  # rise, drop, hold (2 is within the band)
)
def test_tier_moves_by_the_ema_after_warmup_every_interval(accepted: int, steps: list[int]) -> None:
    settings = {"candidate_steps": [1, 3, 7], "ema_alpha": 1.0, "warmup_batches": 1, "update_interval": 1}
    adaptive = AdaptiveSteps({"": settings})
    seen = []
    for _ in range(4):
        adaptive.observe(1, [accepted])
        seen.append(adaptive.steps_for(1))
    assert seen == steps


def test_each_batch_size_section_keeps_its_own_tier() -> None:
    sections = {"1": {"candidate_steps": [1, 3, 7]}, "8": {"candidate_steps": [0, 1, 2]}}
    adaptive = AdaptiveSteps({key: {**value, **FAST} for key, value in sections.items()})
    assert (adaptive.steps_for(1), adaptive.steps_for(7), adaptive.steps_for(8), adaptive.steps_for(64)) == (
        3, 3, 1, 1,
    )  # fmt: skip
    for _ in range(8):
        adaptive.observe(12, [0, 0])
    assert (adaptive.steps_for(1), adaptive.steps_for(12)) == (3, 0)
    adaptive.observe(12, [0])
    adaptive.observe(12, [0])
    assert adaptive.steps_for(12) == 1  # after an interval without drafting, the next tier is probed


def test_adaptive_settings_read_from_the_sglang_file(tmp_path: Path) -> None:
    config = load_sim_config(_settings(tmp_path, {"candidate_steps": [2, 4], **FAST}, 0.9))
    assert config.adaptive == {"": {"candidate_steps": [2, 4], **FAST}} and config.k == 4
    with pytest.raises(SimConfigError, match="candidate_steps must be a list"):
        load_sim_config(_settings(tmp_path, {"candidate_steps": "many"}, 0.9))
    assert load_sim_config(_settings(tmp_path, None, 0.9)).adaptive == {"": {}}  # the default tiers


async def _generate(base_url: str, requests: int, details: bool) -> list[dict[str, Any]]:
    bodies = [generate_body(index, 160, details) for index in range(requests)]
    return [answer["meta_info"] for answer in await post_all(base_url, "/generate", bodies)]


@pytest.mark.parametrize(("acceptance", "tier"), [(0.97, 7), (0.05, 1)])
async def test_sim_drafts_the_tier_in_use_and_reports_it(
    tmp_path: Path, acceptance: float, tier: int
) -> None:
    settings = _settings(tmp_path, {"candidate_steps": [1, 3, 7], **FAST}, acceptance)
    async with SimServer(flavor="sglang", config_path=settings) as sim:
        assert value(await scrape(sim.base_url), "sglang:spec_num_steps") == 3  # the middle tier first
        metas = await _generate(sim.base_url, 4, details=True)
        page = await scrape(sim.base_url)
    assert value(page, "sglang:spec_num_steps") == tier
    assert value(page, "sglang:spec_num_draft_tokens") == tier + 1
    for meta in metas:  # each step proposed its own tier: neither 3 nor `tier` drafts for every step
        steps, proposed = meta["spec_verify_ct"], meta["spec_num_proposed_drafts"]
        assert 3 * steps != proposed != tier * steps
        figures = figures_from_body({"meta_info": meta})
        assert figures.figures_note is None and figures.spec_tokens == 7  # histogram: 8 buckets
        assert figures.k_in_effect == pytest.approx(proposed / steps)


async def test_drafts_details_only_when_asked(tmp_path: Path) -> None:
    async with SimServer(flavor="sglang", config_path=_settings(tmp_path, FAST, 0.8)) as sim:
        plain, asked = await _generate(sim.base_url, 1, False), await _generate(sim.base_url, 1, True)
        async with httpx.AsyncClient() as client:
            info = (await client.get(sim.base_url + "/server_info")).json()
    assert info["speculative_adaptive"] is True and info["speculative_num_steps"] is None  # not given
    details = {"spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_correct_drafts_histogram"}
    assert not details & plain[0].keys() and plain[0]["spec_verify_ct"] > 0
    assert details <= asked[0].keys()


TABLE = "num_speculative_tokens_per_batch_size = [[1, 1, 3], [2, 64, 1]]"


def _config(tmp_path: Path, table: str = TABLE) -> Path:
    path = write_vllm_config(tmp_path / "config.toml", k=3, sim="content_effect = 0.0\nspeed = 4.0")
    line = "num_speculative_tokens = 3\n"
    path.write_text(path.read_text(encoding="utf-8").replace(line, f"{line}{table}\n"), encoding="utf-8")
    return path


async def _specs(base_url: str, requests: int) -> list[dict[str, Any]]:
    answers = await post_all(base_url, "/v1/chat/completions", chat_bodies(requests, 60))
    return [answer["metrics"]["speculative_decoding"] for answer in answers]


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
    drafted_tokens = grew(before, after, "vllm:spec_decode_num_draft_tokens_total")
    assert drafted_tokens == len(drafted) + 2 * drafted.count(3)


def test_the_table_is_read_as_vllm_reads_it(tmp_path: Path) -> None:
    table = 'num_speculative_tokens_per_batch_size = {"1-4" = 5, "9-16" = 0}'
    config = load_sim_config(_config(tmp_path, table))
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
