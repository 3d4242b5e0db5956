"""`tune --apply` writes vLLM's k-by-batch-size table where the best k differs significantly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.sim.conftest import samples, value
from tests.tune.conftest import TuneSim, tune_result
from tests.tune.test_decision import _sweep
from tests.tune.test_sweep import tune_json
from tui.configs.document import load_document
from tui.tune.plan import VLLM_TABLE, default_key, edited, edited_table
from tui.tune.result import CellRun, ScheduleStep, TuneCell, TuneResult, ValueOutcome, analyse, table_decision

CONFIG = """[model]
name = "deepseek-ai/DeepSeek-V3"

[speculative]
enabled = false  # off for now
method = "mtp"
num_speculative_tokens = 3

[scheduler]
max_num_seqs = 64
"""


def _result(rates: dict[int, dict[int, float]], rounds: int = 2, kind: str = "vllm_toml") -> TuneResult:
    """A swept result: per concurrency, each value's decode rate (the baseline 0 at 100)."""
    outcomes = {value: ValueOutcome(value=value, started=True) for value in rates[next(iter(rates))]}
    for seed, (concurrency, by_value) in enumerate(rates.items()):
        for run in _sweep(by_value, rounds, seed=seed):
            cell_run = CellRun(round=run.round, order=run.order, samples=list(run.samples))
            outcome = outcomes[run.value]
            cell = next((c for c in outcome.cells if c.concurrency == concurrency), None)
            if cell is None:
                cell = TuneCell(value=run.value, concurrency=concurrency, ok=True)
                outcome.cells.append(cell)
            cell.runs.append(cell_run)
    result = tune_result(
        outcomes=list(outcomes.values()), kind=kind, original_value=0, requests=16, max_tokens=64
    )
    return analyse(result)


def test_a_significant_change_of_the_best_k_between_loads_becomes_a_table() -> None:
    result = _result({1: {0: 100.0, 2: 150.0}, 8: {0: 100.0, 2: 70.0}, 32: {0: 100.0, 2: 60.0}})
    table, why = table_decision(result, 64)
    assert table == [[1, 1, 2], [2, 64, 0]]
    assert why == "the best k differs significantly between loads: batch 1: k=2, 2-64: k=0"


def test_no_table_without_a_significant_difference_or_a_second_k() -> None:
    # within noise at both loads: the recommendation is the cheaper k=0 everywhere
    tied = _result({1: {0: 100.0, 2: 101.0}, 8: {0: 100.0, 2: 99.5}}, rounds=1)
    assert table_decision(tied, 64) == (None, "one k is best at every measured load")
    # a schedule whose boundary the intervals cannot tell apart (as it would read from point estimates)
    forced = tied.model_copy(
        update={"schedule": [ScheduleStep(value=2, up_to_concurrency=1), tied.schedule[0]]}
    )
    table, why = table_decision(forced, 64)
    assert table is None
    assert why.startswith(
        "the best k changes between concurrency 1 and 8 (k=2 → k=0) but one of them is within noise"
    )
    sglang = _result({1: {0: 100.0, 2: 150.0}, 8: {0: 100.0, 2: 70.0}}, kind="sglang_json")
    assert table_decision(sglang, 64)[0] is None


def test_the_table_is_written_with_its_maximum_and_speculation_on_and_one_k_takes_it_out() -> None:
    doc = load_document(CONFIG, "vllm_toml")
    after = edited_table(doc, [[1, 1, 2], [2, 64, 0]])
    assert after.get(("speculative", "num_speculative_tokens")) == 2
    assert after.get(("speculative", "enabled")) is True
    assert "enabled = true  # off for now" in after.text  # the comment stays
    assert after.get(VLLM_TABLE) == [[1, 1, 2], [2, 64, 0]]
    # a swept k is measured alone: the table (which would clamp or replace it) is taken out
    key = default_key(after)
    single = edited(after, key, 3, after)
    assert not single.has(VLLM_TABLE) and single.get(("speculative", "num_speculative_tokens")) == 3


async def _drafts_per_token(url: str, concurrency: int) -> float:
    """Draft tokens per generated token over one burst of 2 × `concurrency` greedy requests."""
    async with httpx.AsyncClient(timeout=60.0) as client:

        async def counters() -> tuple[float, float]:
            page = samples((await client.get(url + "/metrics")).text)
            return (
                value(page, "vllm:spec_decode_num_draft_tokens_total"),
                value(page, "vllm:generation_tokens_total"),
            )

        async def one(index: int) -> None:
            body = {"prompt": f"request {index}", "max_tokens": 40, "temperature": 0, "ignore_eos": True}
            (await client.post(url + "/v1/completions", json=body)).raise_for_status()

        drafted, generated = await counters()
        gate = asyncio.Semaphore(concurrency)

        async def gated(index: int) -> None:
            async with gate:
                await one(index)

        await asyncio.gather(*(gated(index) for index in range(2 * concurrency)))
        drafted_after, generated_after = await counters()
    return (drafted_after - drafted) / (generated_after - generated)


def test_tune_apply_writes_the_table_and_the_restarted_sim_runs_each_ranges_k(
    tune_sim: TuneSim, tmp_path: Path
) -> None:
    """The sim's model: k=2 1.18x faster than off at concurrency 1, off 1.22x faster at 16."""
    result, stdout = tune_json(
        tune_sim, tmp_path / "tune.json", "--values", "0,2", "--concurrency", "1,16",
        "--requests", "12", "--rounds", "2", "--apply",
    )  # fmt: skip
    assert result["applied"] and result["applied"]["table"] == [[1, 1, 2], [2, 64, 0]], stdout
    assert "--apply: the best k differs significantly between loads: batch 1: k=2, 2-64: k=0" in stdout
    text = tune_sim.config.read_text(encoding="utf-8")
    assert "num_speculative_tokens_per_batch_size = [[1, 1, 2], [2, 64, 0]]" in text
    assert "enabled = true" in text and "num_speculative_tokens = 2   # draft tokens per step" in text
    # the restarted sim runs the table: 2 draft tokens per step alone, almost none at 8 at a time
    alone = asyncio.run(_drafts_per_token(tune_sim.url, 1))
    busy = asyncio.run(_drafts_per_token(tune_sim.url, 8))
    assert 0.6 < alone < 1.0  # k=2 drafts, 1 + accepted tokens per step
    assert busy < 0.25 * alone  # only the burst's last steps, with one request left, draft
