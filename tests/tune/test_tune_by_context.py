"""The context axis on the simulator: prompt lengths checked, where speculation stops paying found."""

from __future__ import annotations

from pathlib import Path

from tests.sim.conftest import write_vllm_config
from tests.tune.conftest import running_sim, spectop
from tests.tune.test_sweep import tune_json
from tui.sim.behaviour import Behaviour, expected_tokens_per_step
from tui.sim.config import load_sim_config
from tui.tune.result import NOT_WRITTEN

LENGTHS = (256, 512, 2048)
# Speculation pays well at short context; acceptance halves at 1024 tokens and each verified token reads
# the context at 2 ms per 1k tokens, so somewhere between 512 and 2048 tokens it stops paying.
CONTEXT_MODEL = """acceptance = [0.8, 0.7, 0.6, 0.5]
content_effect = 0.0
step_base_ms = 10.0
step_per_seq_ms = 1.0
verify_cost_per_draft = 0.35
draft_cost_ms = 0.5
prefill_ms_per_token = 0.001
spec_prefill_overhead = 0.0
context_half_tokens = 1024
context_ms_per_1k = 2.0
speed = 2.0
seed = 7
"""


def context_config(tmp_path: Path) -> Path:
    folder = tmp_path / "sim"
    folder.mkdir()
    return write_vllm_config(folder / "config.toml", max_num_seqs=256, sim=CONTEXT_MODEL)


def model_speedup(behaviour: Behaviour, prompt_tokens: int, k: int) -> float:
    """The model's decode speedup of k over speculation off at batch 1 and this prompt length."""
    accepted = expected_tokens_per_step(behaviour.request_acceptance("", 0.0, prompt_tokens)[:k])
    on = behaviour.decode_step_s(1, k) + behaviour.context_s(prompt_tokens, k)
    off = behaviour.decode_step_s(1, 0) + behaviour.context_s(prompt_tokens, 0)
    return accepted * off / on


def test_tune_finds_where_speculation_stops_paying_along_the_context_axis(tmp_path: Path) -> None:
    config = context_config(tmp_path)
    before = config.read_text(encoding="utf-8")
    behaviour = Behaviour.from_config(load_sim_config(config))
    speedups = {tokens: model_speedup(behaviour, tokens, 2) for tokens in LENGTHS}
    assert speedups[256] > 1.4 and speedups[512] > 1.25 and speedups[2048] < 0.85, speedups
    with running_sim(config) as sim:
        result, stdout = tune_json(
            sim, tmp_path / "tune.json", "--values", "0,2", "--concurrency", "1", "--requests", "8",
            "--prompt-tokens", ",".join(map(str, LENGTHS)), "--apply",
        )  # fmt: skip
    best = {d["prompt_tokens"]: d["best"] for d in result["context_decisions"]}
    assert best == {256: 2, 512: 2, 2048: 0}
    [stop] = result["context_stops"]
    assert (stop["prompt_tokens"], stop["pays_up_to"], stop["significant"]) == (2048, 512, True)
    stop_line = "context at concurrency 1: speculation stops paying at 2,048 prompt tokens (it pays at 512)"
    assert stop_line in stdout
    for cell in result["outcomes"][0]["cells"]:  # the length asked is the length the server counted
        assert abs(cell["prompt_tokens_counted"] - cell["prompt_tokens"]) < 0.1 * cell["prompt_tokens"]
    # the decisions per load are at the first length; nothing context-keyed is written, and it says so
    assert result["best"] == {"1": 2} and NOT_WRITTEN in result["apply_note"]
    assert config.read_text(encoding="utf-8") == before
    assert "prompts at 2048 tokens: synthesized: mixed's prompts padded with filler words" in stdout


def test_bench_runs_a_burst_per_prompt_length_and_checks_the_length(tmp_path: Path) -> None:
    with running_sim(context_config(tmp_path)) as sim:
        code, out, err = spectop(
            "bench", "--a", sim.url, "--requests", "4", "--rounds", "1", "--max-tokens", "16",
            "--prompt-tokens", "256,2k", "--no-history",
        )  # fmt: skip
    assert code == 0, err
    assert "== context 2048 tokens: synthesized: mixed's prompts padded with filler words" in out
    assert "A: 2,048 tokens asked; the server counted 2,0" in out
    table = out[out.index("by context length") :].splitlines()
    assert table[1].split()[:2] == ["prompt", "tokens"] and len(table) == 4
    assert [row.split()[0] for row in table[2:]] == ["256", "2,048"]
