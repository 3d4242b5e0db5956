"""SGLang adaptive steps in the config: `speculative_adaptive` and
`speculative_adaptive_config` in the schema, lint (the JSON file read and checked) and launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.configs.document import load_document
from tui.configs.lint import Finding, lint_document
from tui.configs.sglang_adaptive import problems, tiers

BASE = {"model_path": "deepseek-ai/DeepSeek-V3", "speculative_algorithm": "EAGLE"}


def _lint(**fields: object) -> dict[str, Finding]:
    data = {**BASE, **fields}
    findings = lint_document(load_document(json.dumps(data, indent=2), "sglang_json"))
    return {finding.id: finding for finding in findings}


def _config_file(tmp_path: Path, config: object) -> str:
    path = tmp_path / "adaptive.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


GOOD = {
    "candidate_steps": [1, 3, 7],
    "ema_alpha": 0.2,
    "warmup_batches": 10,
    "update_interval": 5,
    "down_hysteresis": -0.25,
}


def test_a_good_config_lints_clean(tmp_path: Path) -> None:
    found = _lint(
        speculative_adaptive=True,
        speculative_adaptive_config=_config_file(tmp_path, GOOD),
        speculative_eagle_topk=1,
        speculative_num_steps=3,
    )
    assert not [f for f in found.values() if f.id.startswith("sglang-adaptive") or f.severity == "error"]


def test_adaptive_lets_sglang_choose_steps_with_topk_set() -> None:
    # SGLang asserts only when adaptive is off (sglang-server-args.md --speculative-num-steps).
    assert "sglang-auto-choice" not in _lint(speculative_adaptive=True, speculative_eagle_topk=1)


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ({"candidate_steps": "1,3,7"}, "candidate_steps must be a list"),
        ({"candidate_steps": [3, 1, 7]}, "should rise"),
        ({"ema_alpha": 1.5}, "ema_alpha must be in (0, 1]"),
        ({"update_interval": 0}, "update_interval must be a whole number >= 1"),
        ({"rise_threshold": "high"}, "rise_threshold must be a number"),
        ({"down_hysteresis": "low"}, "down_hysteresis must be a number"),  # upstream's names for them
        ({"ceiling_coeff": "off"}, "ceiling_coeff must be a number"),
        ({"candidate_step": [1, 3]}, "unknown key 'candidate_step'"),
        ({"8": {"ema_alpha": 0}}, "batch size 8: ema_alpha"),
        ([1, 3, 7], "expected an object"),
    ],
)
def test_config_file_problems(tmp_path: Path, config: object, why: str) -> None:
    found = _lint(speculative_adaptive=True, speculative_adaptive_config=_config_file(tmp_path, config))
    assert why in found["sglang-adaptive-config"].message


def test_unreadable_file_and_unused_settings(tmp_path: Path) -> None:
    missing = _lint(speculative_adaptive=True, speculative_adaptive_config=str(tmp_path / "none.json"))
    assert "cannot read" in missing["sglang-adaptive-config"].message
    assert "sglang-adaptive-config-unused" in _lint(speculative_adaptive_config="a.json")
    topk = _lint(speculative_adaptive=True, speculative_eagle_topk=2)
    assert topk["sglang-adaptive-topk"].severity == "error"
    off = {"model_path": "m", "speculative_adaptive": True}
    findings = lint_document(load_document(json.dumps(off), "sglang_json"))
    assert "sglang-adaptive-without-speculation" in {f.id for f in findings}


def test_steps_outside_the_candidates_and_tiers(tmp_path: Path) -> None:
    path = _config_file(tmp_path, {"1": {"candidate_steps": [1, 2]}, "64": {"candidate_steps": [0, 1]}})
    found = _lint(speculative_adaptive=True, speculative_adaptive_config=path, speculative_num_steps=3)
    assert "[0, 1, 2]" in found["sglang-adaptive-steps"].message
    assert tiers({}) == [1, 3, 7] and problems(GOOD) == []
