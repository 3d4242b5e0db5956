"""Burst files: bursts kept on disk, listed, loaded and compared (before/after)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from timed_server import Behaviour, TimedServer

from tests.bursts.verdict_words import verdict_body
from tui.bench.burst_store import (
    BurstFileError,
    bursts_dir,
    combine_bursts,
    list_bursts,
    load_burst,
    save_burst,
)
from tui.bench.engine import ArmTarget, BurstConfig, run_burst
from tui.bench.prompts import load_prompt_set
from tui.bench.results import BurstResult, ServerAcceptance
from tui.bench.session import PastArm, compare
from tui.cli import main


async def _burst(client: httpx.AsyncClient, behaviour: Behaviour, prompts: str = "code-en"):
    with TimedServer(behaviour) as server:
        config = BurstConfig(
            a=ArmTarget("srv", server.base_url, model="m", scrape_metrics=False),
            prompt_set=load_prompt_set(prompts),
            requests=6,
            warmup=0,
        )
        return await run_burst(config, client)


async def test_before_after_comparison_from_history(client: httpx.AsyncClient) -> None:
    before = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.02, chunks=12))
    after = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.02, chunks=6, tokens_per_chunk=2))
    first, second = save_burst(before), save_burst(after)
    assert first.parent == bursts_dir() and str(bursts_dir()).endswith("spectop/bursts")
    entries = list_bursts()
    assert [e.path for e in entries] == [second, first]  # newest first
    loaded = load_burst(first)
    assert loaded.arms[0].requests[0].ttft_s == before.arms[0].requests[0].ttft_s
    summary = compare(PastArm(path=first), PastArm(path=second)).summary
    comparison = summary.comparison
    assert comparison is not None and comparison.ci95 is not None
    # Before: 11 tokens after the first in 11 gaps; after: 11 in 5 gaps -> 11/5 = 2.2x (late sleeps on a
    # loaded machine stretch the gaps unevenly, so only the side and rough size are asserted).
    assert comparison.decode_tokens_per_s_ratio is not None
    assert 1.6 < comparison.decode_tokens_per_s_ratio < 3.2
    assert comparison.ci95[0] > 1.0
    assert verdict_body(comparison.verdict).startswith("after is"), comparison.verdict
    # Same words at temperature 0, just two per chunk: equivalence is 100%.
    assert summary.equivalence is not None
    assert summary.equivalence.identical == summary.equivalence.compared == 6


async def test_different_prompt_sets_are_not_compared(client: httpx.AsyncClient) -> None:
    fast = Behaviour(ttft_s=0.0, interval_s=0.0, chunks=3)
    one, two = await _burst(client, fast, "code-en"), await _burst(client, fast, "chat-en")
    with pytest.raises(BurstFileError, match="different prompt sets"):
        combine_bursts(one, two)


def test_broken_files_are_skipped_in_the_list_and_named_on_load(tmp_path: Path) -> None:
    folder = bursts_dir()
    folder.mkdir(parents=True)
    bad = folder / "burst-20260101-000000-000000.json"
    bad.write_text('{"format": "spectop-burst/1"}', encoding="utf-8")
    assert list_bursts() == []
    with pytest.raises(BurstFileError, match="not a spectop burst"):
        load_burst(bad)


def _with_acceptance(result: BurstResult, rate: float | None) -> BurstResult:
    arm = result.arms[0].model_copy(update={"server": ServerAcceptance(acceptance_rate=rate)})
    return result.model_copy(update={"arms": [arm]})


@pytest.mark.parametrize(
    ("before_rate", "after_rate", "words"),
    [
        (0.54, 0.71, "acceptance 54% → 71%"),
        (None, 0.71, "acceptance – → 71%"),
        (0.54, None, "acceptance 54% → –"),
    ],
)
async def test_compare_verdict_names_the_acceptance_of_both_arms(
    client: httpx.AsyncClient,
    capsys: pytest.CaptureFixture[str],
    before_rate: float | None,
    after_rate: float | None,
    words: str,
) -> None:
    before = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.01, chunks=8))
    after = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.01, chunks=4, tokens_per_chunk=2))
    first = save_burst(_with_acceptance(before, before_rate))
    second = save_burst(_with_acceptance(after, after_rate))
    capsys.readouterr()
    assert main(["bench", "--compare", str(first), str(second)]) == 0
    lines = capsys.readouterr().out.splitlines()
    verdict = lines[lines.index("") + 1]  # the verdict follows the table after a blank line
    assert verdict.endswith(f", {words}")
