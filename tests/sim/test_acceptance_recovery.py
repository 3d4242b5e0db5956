"""The configured acceptance comes back out of the sim's counters and log, within binomial error (derived
here with the reference formulas, vllm.md §1.2; spectop's own derivation: test_spectop_reads_the_sim.py)."""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path

import pytest

from tests.sim.conftest import burst, scrape, value, write_vllm_config
from tui.sim.behaviour import expected_tokens_per_step
from tui.sim.server import SimServer

ACCEPTANCE = [0.8, 0.6, 0.5]


def _accepted_variance(probabilities: list[float]) -> float:
    """Variance of the number of accepted draft tokens in one step (stop at the first rejection)."""
    distribution, chain = [], 1.0
    for p in probabilities:
        distribution.append(chain * (1 - p))
        chain *= p
    distribution.append(chain)
    mean = sum(n * q for n, q in enumerate(distribution))
    return sum((n - mean) ** 2 * q for n, q in enumerate(distribution))


def _logged(text: str, what: str) -> int:
    """The tokens the vLLM log's SpecDecoding lines count (`Accepted: N tokens`), summed."""
    return sum(int(m) for m in re.findall(rf"{what}: (\d+) tokens", text))


@pytest.mark.parametrize("flavor", ["vllm", "llamacpp"])
async def test_counters_recover_configured_acceptance(tmp_path: Path, flavor: str) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=3, sim="content_effect = 0.0\nspeed = 4.0")
    log = tmp_path / "server.log"
    async with SimServer(
        flavor=flavor, config_path=config, acceptance=ACCEPTANCE, log_path=log, log_interval_s=0.5
    ) as sim:
        await burst(sim, [f"Request number {index} about caches" for index in range(40)], max_tokens=200)
        page = await scrape(sim.base_url)
        if flavor == "vllm":  # until the log interval after the load has written its line
            accepted = value(page, "vllm:spec_decode_num_accepted_tokens_total")
            deadline = asyncio.get_running_loop().time() + 60  # a hang guard, not a speed target
            while _logged(log.read_text(), "Accepted") < accepted:
                assert asyncio.get_running_loop().time() < deadline, "the last log interval never came"
                await asyncio.sleep(0.05)
    prefix = "vllm:" if flavor == "vllm" else "llamacpp:"
    drafts = value(page, prefix + "spec_decode_num_drafts_total")
    drafted = value(page, prefix + "spec_decode_num_draft_tokens_total")
    accepted = value(page, prefix + "spec_decode_num_accepted_tokens_total")
    assert drafted == 3 * drafts
    assert drafts > 1000
    # per position: P(position i accepted) = p_0 * ... * p_i, a binomial over the drafts
    chain = 1.0
    for position, p in enumerate(ACCEPTANCE):
        chain *= p
        observed = value(
            page, prefix + "spec_decode_num_accepted_tokens_per_pos_total", position=str(position)
        )
        tolerance = 4 * math.sqrt(chain * (1 - chain) / drafts)
        assert abs(observed / drafts - chain) < tolerance, (position, observed / drafts, chain)
    mean_length = 1 + accepted / drafts
    expected = expected_tokens_per_step(ACCEPTANCE)
    assert abs(mean_length - expected) < 4 * math.sqrt(_accepted_variance(ACCEPTANCE) / drafts)
    if flavor == "vllm":
        text = log.read_text()
        logged_accepted = _logged(text, "Accepted")
        logged_drafted = _logged(text, "Drafted")
        assert logged_accepted == accepted
        assert logged_drafted == drafted
        assert "Per-position acceptance rate: " in text


async def test_sglang_gauges_and_counters_recover_acceptance(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(
        '{"model_path": "m", "tp_size": 1, "mem_fraction_static": 0.8, '
        '"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, '
        '"speculative_eagle_topk": 1, "max_running_requests": 16, '
        '"sim": {"content_effect": 0.0, "speed": 4.0, "decode_log_interval": 20}}'
    )
    log = tmp_path / "server.log"
    async with SimServer(flavor="sglang", config_path=settings, acceptance=ACCEPTANCE, log_path=log) as sim:
        await burst(sim, [f"Request number {index} about caches" for index in range(40)], max_tokens=200)
        page = await scrape(sim.base_url)
    generated = value(page, "sglang:generation_tokens_total")
    verify = value(page, "sglang:spec_verify_calls_total")
    expected = expected_tokens_per_step(ACCEPTANCE)
    # completion tokens per verify call (first token free, last step cut short): close to the mean length
    assert abs(generated / verify - expected) < 0.15
    lengths = [float(m) for m in re.findall(r"accept len: ([\d.]+)", log.read_text())]
    assert len(lengths) > 10
    assert abs(sum(lengths) / len(lengths) - expected) < 0.15
