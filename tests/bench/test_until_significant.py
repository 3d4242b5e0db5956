"""`spectop bench --until-significant`: rounds until B/A's interval excludes 1.0, or --max-rounds."""

from __future__ import annotations

import httpx
from timed_server import Behaviour, TimedServer

from tests.bench.bursts import burst_config
from tui.bench.engine import run_burst
from tui.bench.report.summary import burst_summary
from tui.bench.report.text import render_text
from tui.bench.session import BurstRequest, _sequential


async def _burst(interval_a: float, interval_b: float, max_rounds: int, spread: float = 0.0):  # type: ignore[no-untyped-def]
    request = BurstRequest(until_significant=True, max_rounds=max_rounds)

    def paced(interval_s: float, seed: int) -> Behaviour:
        return Behaviour(
            ttft_s=0.01, interval_s=interval_s, chunks=8, interval_spread=spread, spread_seed=seed
        )

    with TimedServer(paced(interval_a, 1)) as a, TimedServer(paced(interval_b, 2)) as b:
        config = burst_config(
            a.base_url, b.base_url, requests=4, concurrency=2, max_tokens=16, **_sequential(request, 2)
        )
        async with httpx.AsyncClient() as client:
            return await run_burst(config, client)


async def test_a_clear_difference_stops_at_the_first_look() -> None:
    result = await _burst(0.02, 0.01, max_rounds=6)
    assert result.settings.rounds == 2 and result.settings.requests == 8
    assert result.settings.looks == 5 and abs(result.settings.ci_level - 0.99) < 1e-9
    summary = burst_summary(result)
    assert summary.comparison is not None and summary.comparison.ci95 is not None
    assert summary.comparison.ci95[0] > 1.0
    text = render_text(summary)
    assert "99% CI (Bonferroni: 95% over 5 looks)" in text
    assert "until significant: 2 rounds, stopped: the interval excludes 1.0 after 2 rounds" in text


async def test_no_difference_runs_to_the_last_round_and_says_so() -> None:
    # Requests that differ by up to ±50%, as real ones do: with servers that pace every request alike the
    # interval is so narrow that a loaded machine's few percent of scheduling delay is "significant".
    result = await _burst(0.02, 0.02, max_rounds=3, spread=0.5)
    assert result.settings.rounds == 3 and len(result.arms[0].requests) == 12
    text = render_text(burst_summary(result))
    assert "no significant difference (" in text
    assert "--max-rounds 3 reached: the interval still spans 1.0" in text
