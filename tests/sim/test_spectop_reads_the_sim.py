"""spectop's own parsers (telemetry scraper, window, log grammar) recover the sim's configured acceptance."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sim.conftest import burst, write_vllm_config
from tui.sim.behaviour import expected_tokens_per_step
from tui.sim.server import SimServer

window = pytest.importorskip("tui.telemetry.window")
scraper = pytest.importorskip("tui.telemetry.scraper")
log_dispatch = pytest.importorskip("tui.telemetry.logs.dispatch")

ACCEPTANCE = [0.85, 0.65, 0.45]


async def _run(sim: SimServer, requests: int = 32) -> None:
    await burst(sim, [f"prompt {index}" for index in range(requests)], max_tokens=160)


@pytest.mark.parametrize("flavor", ["vllm", "sglang", "llamacpp"])
async def test_snapshot_figures_match_configured_acceptance(tmp_path: Path, flavor: str) -> None:
    config = write_vllm_config(
        tmp_path / "config.toml", k=3, sim="content_effect = 0.0\nspeed = 4.0\ndecode_log_interval = 10"
    )
    async with (
        SimServer(flavor=flavor, config_path=config, acceptance=ACCEPTANCE) as sim,
        httpx.AsyncClient() as http,
    ):
        first = await scraper.scrape_metrics(http, sim.base_url + "/metrics")
        await _run(sim)
        last = await scraper.scrape_metrics(http, sim.base_url + "/metrics")
        assert sim.engine is not None
    assert first.backend == last.backend == flavor
    figures = window.figures_between(first, last)
    expected_rate = (expected_tokens_per_step(ACCEPTANCE) - 1) / 3
    assert figures.acceptance_rate is not None
    # about 32 * 160 / 2.3 ≈ 2200 verify steps: 4 standard errors of the per-token rate is ≈ 0.03
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
        await _run(sim, requests=8)
        deadline = asyncio.get_running_loop().time() + 60  # a hang guard, not a speed target
        while not all(_logged_kinds(log)):  # until the log interval after the run has written its lines
            assert asyncio.get_running_loop().time() < deadline, log.read_text()[-2000:]
            await asyncio.sleep(0.05)
    spec, stats = _logged_kinds(log)
    assert spec and stats
    accepted = sum(event.accepted_tokens or 0 for event in spec)
    drafted = sum(event.drafted_tokens or 0 for event in spec)
    assert abs(accepted / drafted - (expected_tokens_per_step(ACCEPTANCE) - 1) / 3) < 0.06
    oom_log = tmp_path / "oom.log"
    greedy = write_vllm_config(tmp_path / "greedy.toml", k=8, gpu_memory_utilization=0.95)
    with pytest.raises(Exception, match="out of memory"):
        await SimServer(config_path=greedy, log_path=oom_log).start()
    errors = [log_dispatch.parse_line(line, "vllm") for line in oom_log.read_text().splitlines()]
    assert any(event is not None and event.kind == "error" for event in errors)
