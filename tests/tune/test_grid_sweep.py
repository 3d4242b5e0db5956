"""`spectop tune --grid` against a real simulator on an SGLang settings.json (a wider tree never pays)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sweep import accepted_moments, tune_json

from tests.tune.conftest import TuneSim, changed_lines, health, running_sim
from tui.configs.document import load_document
from tui.sim.behaviour import Behaviour, expected_tokens_per_step
from tui.sim.config import load_sim_config
from tui.tune.plan import edited, grid_key

GRID = ("steps=0,3", "topk=1,4")  # draft left out: steps + 1 for topk 1, the file's 9 for topk 4
CONCURRENCIES = (1, 8)
SETTINGS = {
    "model_path": "deepseek-ai/DeepSeek-V3",
    "tp_size": 1,
    "mem_fraction_static": 0.85,
    "speculative_algorithm": "EAGLE",
    "speculative_num_steps": 3,
    "speculative_eagle_topk": 4,
    "speculative_num_draft_tokens": 9,
    "max_running_requests": 48,
    "sim": {
        "acceptance": [0.9, 0.85, 0.8, 0.6],
        "content_effect": 0.0,
        "step_base_ms": 10.0,
        "step_per_seq_ms": 4.0,
        "verify_cost_per_draft": 1.5,
        "draft_cost_ms": 0.5,
        "prefill_base_ms": 1.0,
        "prefill_ms_per_token": 0.001,
        "spec_prefill_overhead": 0.0,
        "draft_memory_per_token": 0.02,
        "seed": 11,
        "speed": 2.0,  # twice the modelled speed: the test compares speed ratios
    },
}


@pytest.fixture
def sglang_sim(tmp_path: Path) -> Iterator[TuneSim]:
    folder = tmp_path / "sim"
    folder.mkdir()
    config = folder / "settings.json"
    config.write_text(json.dumps(SETTINGS, indent=2) + "\n", encoding="utf-8")
    with running_sim(config) as sim:
        yield sim


def model_for(config: Path, value: int) -> Behaviour:
    """The simulator's own behaviour for the file with grid point `value` written (0 = off)."""
    doc = load_document(config.read_text(encoding="utf-8"), "sglang_json", config)
    key = grid_key(doc, GRID)
    probe = config.with_name(f"probe-{value}.json")
    probe.write_text(edited(doc, key, value, doc).text, encoding="utf-8")
    return Behaviour.from_config(load_sim_config(probe))


def expected_rate(config: Path, value: int, concurrency: int) -> float:
    behaviour = model_for(config, value)
    tokens = expected_tokens_per_step(behaviour.acceptance[: behaviour.k])
    return tokens / behaviour.decode_step_s(concurrency)


def test_a_tree_costs_the_sim_its_verify_tokens() -> None:
    sim = load_sim_config(None).model_copy(update={"num_speculative_tokens": 3, "eagle_topk": 4})
    chain = Behaviour.from_config(sim.model_copy(update={"num_draft_tokens": 4}))
    tree = Behaviour.from_config(sim.model_copy(update={"num_draft_tokens": 9}))
    assert chain.k == tree.k == 3 and chain.acceptance == tree.acceptance
    assert tree.decode_step_s(1) > chain.decode_step_s(1)
    plain = Behaviour.from_config(sim.model_copy(update={"eagle_topk": 1}))
    assert chain.decode_step_s(1) == plain.decode_step_s(1)
    # A tree of 1 draft token accepts at most one, however many steps draft it.
    small = Behaviour.from_config(sim.model_copy(update={"num_draft_tokens": 2}))
    assert small.k == 1 and small.decode_step_s(1) < chain.decode_step_s(1)


def test_grid_sweep_finds_the_models_best_point_and_applies_only_its_lines(
    sglang_sim: TuneSim, tmp_path: Path
) -> None:
    config = sglang_sim.config
    before = config.read_text(encoding="utf-8")
    before_bytes = config.read_bytes()
    key = grid_key(load_document(before, "sglang_json", config), GRID)
    labels = {value: key.label(value) for value in key.values}
    assert list(labels.values()) == ["off", "steps 3 · topk 1 · draft 4", "steps 3 · topk 4 · draft 9"]
    expected_best = {}
    for concurrency in CONCURRENCIES:
        rates = {value: expected_rate(config, value, concurrency) for value in key.values}
        ranked = sorted(rates, key=rates.__getitem__, reverse=True)
        assert rates[ranked[0]] > 1.2 * rates[ranked[1]], "the model must separate the points"
        expected_best[concurrency] = ranked[0]
    assert expected_best == {1: 1, 8: 0}  # the chain at low load, speculation off at 8
    out = tmp_path / "tune"
    result, stdout = tune_json(
        sglang_sim, Path(f"{out}.json"), "--grid", *GRID, "--concurrency", "1,8", "--requests", "12",
        "--apply", "--apply-at", "1", "--csv", f"{out}.csv", "--markdown", f"{out}.md",
    )  # fmt: skip
    assert {int(c): v for c, v in result["best"].items()} == expected_best
    assert result["best_points"]["1"] == {"value": 1, "steps": 3, "topk": 1, "draft_tokens": 4,
                                          "label": labels[1]}  # fmt: skip
    assert "8" not in result["best_points"]  # speculation off has no point
    assert result["baseline_value"] == 0 and result["original_value"] == 2
    # Rows are labelled by the point; the recommendation names it.
    assert "steps 3 · topk 4 · draft 9 (file)" in stdout and "off (base)" in stdout
    assert f"best at concurrency 1: {labels[1]}" in stdout
    assert f"applied {labels[1]} (best at concurrency 1)" in stdout
    # Acceptance per point follows the sim's chain of `steps` positions, within sampling error.
    outcomes = {outcome["value"]: outcome for outcome in result["outcomes"]}
    for value in (1, 2):
        behaviour = model_for(config, value)
        probabilities = behaviour.acceptance[: behaviour.k]
        mean, variance = accepted_moments(probabilities)
        tokens = expected_tokens_per_step(probabilities)
        for cell in outcomes[value]["cells"]:
            steps = (cell["requests"] + 1) * 23 / tokens
            tolerance = 4 * math.sqrt(variance / steps) / behaviour.k + 0.01
            assert abs(cell["acceptance_rate"] - mean / behaviour.k) < tolerance, (value, cell)
    assert outcomes[0]["cells"][0]["acceptance_rate"] is None  # off: "–", never 0
    rows = list(csv.DictReader(Path(f"{out}.csv").read_text(encoding="utf-8").splitlines()))
    twos = {(r["label"], r["steps"], r["topk"], r["draft_tokens"]) for r in rows if r["value"] == "2"}
    assert twos == {(labels[2], "3", "4", "9")}
    assert f"| {labels[1]} |" in Path(f"{out}.md").read_text(encoding="utf-8")
    # --apply at concurrency 1 wrote the chain: the topk and draft lines changed, nothing else.
    assert changed_lines(before, config.read_text(encoding="utf-8")) == [
        '-  "speculative_eagle_topk": 4,',
        '-  "speculative_num_draft_tokens": 9,',
        '+  "speculative_eagle_topk": 1,',
        '+  "speculative_num_draft_tokens": 4,',
    ]
    after = before_bytes.replace(b'"speculative_eagle_topk": 4,', b'"speculative_eagle_topk": 1,')
    after = after.replace(b'"speculative_num_draft_tokens": 9,', b'"speculative_num_draft_tokens": 4,')
    assert config.read_bytes() == after  # every other byte is the original's
    assert health(sglang_sim.url) == 200
