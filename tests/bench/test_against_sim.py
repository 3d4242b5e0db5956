"""Against the simulator: MTP on beats MTP off at low concurrency; greedy outputs match unless lossy."""

from __future__ import annotations

import httpx

from tests.bench.bursts import burst_config, verdict_body
from tui.bench.engine import ArmTarget, BurstConfig, run_burst
from tui.bench.report.summary import burst_summary
from tui.paths import sample_configs_dir
from tui.sim.faults import FaultSettings
from tui.sim.server import SimServer

MTP_ON = sample_configs_dir() / "config.toml"
MTP_OFF = sample_configs_dir() / "config_mtp_off.toml"
SPEED = 1.0  # real-time steps: faster ones fall under the event loop's own overhead (sim is in-process)


def _config(a_url: str, b_url: str, requests: int = 8, rounds: int = 2) -> BurstConfig:
    arms = ArmTarget("mtp-off", a_url), ArmTarget("mtp-on", b_url)
    return burst_config(*arms, "mixed-en", requests=requests, rounds=rounds, warmup=1, max_tokens=48)


async def test_mtp_on_is_faster_at_low_concurrency_and_outputs_match(client: httpx.AsyncClient) -> None:
    async with (
        SimServer(flavor="vllm", config_path=MTP_OFF, speed=SPEED) as off,
        SimServer(flavor="vllm", config_path=MTP_ON, speed=SPEED) as on,
    ):
        # Three rounds: the sims share this process's event loop, and a busy host slows one round of two
        result = await run_burst(_config(off.base_url, on.base_url, requests=12, rounds=3), client)
    summary = burst_summary(result)
    a, b, comparison, equivalence = summary.a, summary.b, summary.comparison, summary.equivalence
    assert b is not None and comparison is not None and equivalence is not None
    assert a.errors == 0 and b.errors == 0
    assert comparison.decode_tokens_per_s_ratio is not None and comparison.decode_tokens_per_s_ratio > 1.2
    assert comparison.ci95 is not None and comparison.ci95[0] > 1.0
    assert verdict_body(comparison.verdict).startswith("B is"), comparison.verdict
    assert b.tokens_per_chunk is not None and b.tokens_per_chunk > 1.2  # several tokens per chunk
    assert equivalence.compared == equivalence.identical == 12
    # Server-side acceptance during the burst, from /metrics deltas through the telemetry core.
    assert b.acceptance_rate is not None and 0.0 < b.acceptance_rate <= 1.0
    assert b.mean_acceptance_length is not None and b.mean_acceptance_length > 1.0
    assert a.acceptance_rate is None  # no drafting on A: unknown, not 0


async def test_lossy_mode_diverges_and_the_position_is_right(client: httpx.AsyncClient) -> None:
    lossy = FaultSettings(lossy_rate=0.5)
    async with (
        SimServer(flavor="llamacpp", config_path=MTP_OFF, speed=SPEED) as off,
        SimServer(flavor="llamacpp", config_path=MTP_ON, speed=SPEED, faults=lossy) as on,
    ):
        result = await run_burst(_config(off.base_url, on.base_url, requests=6), client)
    summary = burst_summary(result)
    equivalence = summary.equivalence
    assert equivalence is not None and equivalence.compared == 6 and equivalence.identical < 6
    a_by_index = {r.index: r for r in result.arms[0].requests}
    b_by_index = {r.index: r for r in result.arms[1].requests}
    for divergence in equivalence.divergences:
        a, b = a_by_index[divergence.index], b_by_index[divergence.index]
        position = divergence.char_position
        assert a.text[:position] == b.text[:position]
        assert a.text[position : position + 1] != b.text[position : position + 1]
        # llama.cpp streams one token per chunk: the token position is known (its rule: test_report.py)
        assert divergence.token_position is not None
