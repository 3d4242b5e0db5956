"""The configured acceptance comes back out of the sim's counters and log, within binomial error (derived
here with the reference formulas, vllm.md §1.2), and out of spectop's own parsers (telemetry scraper,
window, log grammar) reading the same run."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sim.conftest import Page, burst, samples, until, value, write_vllm_config
from tui.sim.behaviour import expected_tokens_per_step
from tui.sim.server import SimServer
from tui.telemetry import scraper, window
from tui.telemetry.logs import dispatch as log_dispatch

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


def _check_draft_counters(prefix: str, page: Page, log: str) -> None:
    drafts = value(page, prefix + "spec_decode_num_drafts_total")
    drafted = value(page, prefix + "spec_decode_num_draft_tokens_total")
    accepted = value(page, prefix + "spec_decode_num_accepted_tokens_total")
    assert drafted == 3 * drafts
    assert drafts > 1000
    # per position: P(position i accepted) = p_0 * ... * p_i, a binomial over the drafts
    chain, per_pos = 1.0, prefix + "spec_decode_num_accepted_tokens_per_pos_total"
    for position, p in enumerate(ACCEPTANCE):
        chain *= p
        observed = value(page, per_pos, position=str(position))
        tolerance = 4 * math.sqrt(chain * (1 - chain) / drafts)
        assert abs(observed / drafts - chain) < tolerance, (position, observed / drafts, chain)
    mean_length = 1 + accepted / drafts
    expected = expected_tokens_per_step(ACCEPTANCE)
    assert abs(mean_length - expected) < 4 * math.sqrt(_accepted_variance(ACCEPTANCE) / drafts)
    if prefix == "vllm:":
        assert _logged(log, "Accepted") == accepted
        assert _logged(log, "Drafted") == drafted
        assert "Per-position acceptance rate: " in log


def _check_sglang(page: Page, log: str) -> None:
    expected = expected_tokens_per_step(ACCEPTANCE)
    verify = value(page, "sglang:spec_verify_calls_total")
    # completion tokens per verify call (first token free, last step cut short): close to the mean length
    assert abs(value(page, "sglang:generation_tokens_total") / verify - expected) < 0.15
    lengths = [float(m) for m in re.findall(r"accept len: ([\d.]+)", log)]
    assert len(lengths) > 10
    assert abs(sum(lengths) / len(lengths) - expected) < 0.15


def _check_spectops_figures(flavor: str, first: Any, last: Any) -> None:
    assert first.backend == last.backend == flavor
    figures = window.figures_between(first, last)
    assert figures.acceptance_rate is not None
    # about 40 * 200 / 2.1 ≈ 3800 verify steps: 4 standard errors of the per-token rate is ≈ 0.025
    expected_rate = (expected_tokens_per_step(ACCEPTANCE) - 1) / 3
    assert abs(figures.acceptance_rate - expected_rate) < 0.04, figures.acceptance_rate
    if flavor != "sglang":  # SGLang exposes no per-position acceptance
        assert figures.per_position_acceptance is not None
        chain = 1.0
        for observed, p in zip(figures.per_position_acceptance, ACCEPTANCE, strict=True):
            chain *= p
            assert abs(observed - chain) < 4 * math.sqrt(chain * (1 - chain) / 2000), figures
    if flavor == "vllm":
        assert figures.mean_acceptance_length is not None
        assert abs(figures.mean_acceptance_length - expected_tokens_per_step(ACCEPTANCE)) < 0.1


@pytest.mark.parametrize("flavor", ["vllm", "sglang", "llamacpp"])
async def test_configured_acceptance_comes_back_out(tmp_path: Path, flavor: str) -> None:
    sim_section = "content_effect = 0.0\nspeed = 4.0\ndecode_log_interval = 20"
    config = write_vllm_config(tmp_path / "config.toml", k=3, sim=sim_section)
    log = tmp_path / "server.log"
    async with (
        SimServer(
            flavor=flavor, config_path=config, acceptance=ACCEPTANCE, log_path=log, log_interval_s=0.5
        ) as sim,
        httpx.AsyncClient() as http,
    ):
        first = await scraper.scrape_metrics(http, sim.base_url + "/metrics")
        await burst(sim, [f"Request number {index} about caches" for index in range(40)], max_tokens=200)
        last = await scraper.scrape_metrics(http, sim.base_url + "/metrics")
        page = samples((await http.get(sim.base_url + "/metrics")).text)
        if flavor == "vllm":  # until the log interval after the load has written its line
            accepted = value(page, "vllm:spec_decode_num_accepted_tokens_total")
            await until(lambda: _logged(log.read_text(), "Accepted") >= accepted, "no last log interval")
    if flavor == "sglang":
        _check_sglang(page, log.read_text())
    else:
        _check_draft_counters(f"{flavor}:", page, log.read_text())
    _check_spectops_figures(flavor, first, last)


def _logged_kinds(log: Path) -> tuple[list[Any], list[Any]]:
    """The log's spec_decode events and stats events, parsed by spectop's grammar."""
    events = [log_dispatch.parse_line(line, "vllm") for line in log.read_text().splitlines()]
    spec = [event for event in events if event is not None and event.kind == "spec_decode"]
    stats = [event for event in events if event is not None and event.kind == "stats"]
    return spec, stats


async def test_log_lines_parse_with_spectops_grammar(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=3, sim="content_effect = 0.0")
    log = tmp_path / "vllm.log"
    async with SimServer(config_path=config, acceptance=ACCEPTANCE, log_path=log, log_interval_s=0.3) as sim:
        await burst(sim, [f"prompt {index}" for index in range(8)], max_tokens=160)
        # until the log interval after the run has written its lines
        await until(lambda: all(_logged_kinds(log)), "no spec_decode and stats lines in the log")
    spec, _ = _logged_kinds(log)
    accepted = sum(event.accepted_tokens or 0 for event in spec)
    drafted = sum(event.drafted_tokens or 0 for event in spec)
    assert abs(accepted / drafted - (expected_tokens_per_step(ACCEPTANCE) - 1) / 3) < 0.06
