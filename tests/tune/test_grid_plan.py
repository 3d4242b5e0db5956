"""`--grid` for SGLang: steps × topk × draft tokens, skipped points, the edits, the labelled result."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.tune.conftest import changed_lines, tune_result
from tui.cli import build_parser
from tui.commands.tune import _options
from tui.configs.document import load_document
from tui.paths import sample_configs_dir
from tui.tune.plan import TunePlanError, edited, grid_key, grid_problem, parse_grid, tree_candidates
from tui.tune.result import TuneResult, analyse, render_csv, render_json, render_markdown, render_text

GRID = ["steps=0,1,2,3", "topk=1,4", "draft=2,4,8"]
KEYS = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")


def sample() -> tuple[str, object]:
    text = (sample_configs_dir() / "sglang_settings.json").read_text(encoding="utf-8")
    return text, load_document(text, "sglang_json", Path("settings.json"))


def test_grid_syntax() -> None:
    assert parse_grid(GRID) == {"steps": (0, 1, 2, 3), "topk": (1, 4), "draft": (2, 4, 8)}
    assert parse_grid("steps=1,2 topk=1") == {"steps": (1, 2), "topk": (1,)}  # one quoted word works too
    for bad, needle in [
        ("steps=1 width=2", "AXIS=LIST"),
        ("topk=1,4", "steps=LIST"),
        ("steps=1 steps=2", "twice"),
        ("steps=1 draft=1", "below 2"),
        ("steps=1 topk=0", "below 1"),
        ("steps=one", "whole number"),
    ]:
        with pytest.raises(TunePlanError, match=needle):
            parse_grid(bad)


def test_sglang_rules_skip_what_it_would_not_run_as_written() -> None:
    # topk 1: SGLang forces draft = steps + 1 (the 2/1/4 it silently turns into 2/1/3).
    assert grid_problem(3, 1, 4) is None
    reason = grid_problem(2, 1, 4)
    assert reason is not None and "steps + 1 = 3" in reason
    # topk > 1: the tree offers topk + (steps - 1)·topk² candidates for draft - 1 tokens.
    assert tree_candidates(1, 4) == 4 and tree_candidates(3, 4) == 36
    assert grid_problem(1, 4, 5) is None
    reason = grid_problem(1, 4, 8)
    assert reason is not None and "only 4 candidates for 7" in reason
    assert grid_problem(2, 4, 8) is None


def test_every_valid_point_is_a_value_and_edits_only_its_lines() -> None:
    text, doc = sample()  # EAGLE, steps 3, topk 1, draft 4
    key = grid_key(doc, GRID)
    labels = {point.value: point.label for point in key.points}
    runnable = {
        (s, t, d) for s in (1, 2, 3) for t in (1, 4) for d in (2, 4, 8) if grid_problem(s, t, d) is None
    }
    assert {(p.steps, p.topk, p.draft_tokens) for p in key.points} == runnable
    assert key.values == (0, *sorted(labels))  # steps 0 is speculation off, swept first
    assert len(key.skipped) == 3 * 2 * 3 - len(runnable)
    assert all(grid_problem(s.steps, s.topk, s.draft_tokens) == s.reason for s in key.skipped)
    assert key.current(doc) == next(v for v, label in labels.items() if label == "steps 3 · topk 1 · draft 4")
    for value in key.values:
        after = edited(doc, key, value, doc)
        lines = changed_lines(text, after.text)
        removed = [line for line in lines if line.startswith("-")]
        assert 0 <= len(removed) <= 3 and len(lines) == 2 * len(removed)
        if value == 0:
            assert lines == ['-  "speculative_algorithm": "EAGLE",', '+  "speculative_algorithm": null,']
            continue
        point = key.point(value)
        assert point is not None
        assert all(any(f'"{name}"' in line for name in KEYS) for line in lines)
        assert tuple(after.data[name] for name in KEYS) == (point.steps, point.topk, point.draft_tokens)
        assert key.current(after) == value


def test_without_steps_0_the_files_point_is_the_baseline_and_an_off_file_gets_its_algorithm_back() -> None:
    _, doc = sample()
    key = grid_key(doc, "steps=1,2 topk=1")
    assert 0 not in key.values and len(key.values) == 2
    original = key.current(doc)  # steps 3 · topk 1 · draft 4 is not in the grid: numbered after it
    assert original == 3 and key.label(3) == "steps 3 · topk 1 · draft 4" and 3 not in key.values
    off = edited(doc, key, 0, doc)
    assert key.current(off) == 0
    back = edited(off, key, key.values[0], doc)
    assert back.data["speculative_algorithm"] == "EAGLE" and back.data["speculative_num_steps"] == 1


def test_a_grid_needs_an_sglang_file_and_a_runnable_point() -> None:
    _, doc = sample()
    with pytest.raises(TunePlanError, match="no valid point"):
        grid_key(doc, "steps=2 topk=1 draft=8")
    with pytest.raises(TunePlanError, match="not SGLang"):
        grid_key(load_document("[speculative]\nnum_speculative_tokens = 2\n", "vllm_toml"), "steps=1")
    with pytest.raises(TunePlanError, match="draft=LIST"):  # topk 4 and the file has no draft tokens
        no_draft = '{"speculative_algorithm": "EAGLE", "speculative_num_steps": 2}'
        grid_key(load_document(no_draft, "sglang_json"), "steps=2 topk=4")


def test_the_cli_takes_the_grid_and_refuses_it_with_values(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    common = ["tune", "c.json", "--endpoint", "http://127.0.0.1:1", "--restart-command", "true"]
    options = _options(parser.parse_args([*common, "--grid", *GRID]))
    assert options.grid == tuple(GRID)
    with pytest.raises(TunePlanError, match="leave out --key and --values"):
        _options(parser.parse_args([*common, "--grid", "steps=1", "--values", "1,2"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["tune", "--help"])
    assert "--grid steps=1,2,3 topk=1,4 draft=2,4,8" in " ".join(capsys.readouterr().out.split())


def _grid_result() -> TuneResult:
    _, doc = sample()
    key = grid_key(doc, "steps=0,3 topk=1,4 draft=4,9")
    rates = {0: (10.0, 10.0), 1: (20.0, 9.0), 2: (12.0, 5.0), 3: (11.0, 4.0)}
    assert [key.label(v) for v in key.values] == [
        "off", "steps 3 · topk 1 · draft 4", "steps 3 · topk 4 · draft 4", "steps 3 · topk 4 · draft 9",
    ]  # fmt: skip
    by_load = {
        (value, c): rate for value, pair in rates.items() for c, rate in zip((1, 8), pair, strict=True)
    }
    return analyse(
        tune_result(
            by_load, config_file="settings.json", kind="sglang_json", key=key.name,
            original_value=key.current(doc), points=list(key.points), skipped=list(key.skipped),
        )
    )  # fmt: skip


def test_rows_the_recommendation_and_every_export_carry_the_point() -> None:
    result = _grid_result()
    assert result.best == {1: 1, 8: 0}
    text = render_text(result)
    assert "steps 3 · topk 1 · draft 4 (file)" in text and "off (base)" in text
    assert "best at concurrency 1: steps 3 · topk 1 · draft 4" in text
    assert "schedule: steps 3 · topk 1 · draft 4 up to 1, off beyond" in text
    skipped = "steps 3 · topk 1 · draft 9 skipped: with topk 1 SGLang forces draft tokens = steps + 1 = 4"
    assert skipped in text
    assert "k=" not in text
    markdown = render_markdown(result)
    assert "| steps 3 · topk 4 · draft 9 |" in markdown and "| steps 3 · topk 4 · draft 9 | 8 |" in markdown
    rows = list(csv.DictReader(io.StringIO(render_csv(result))))
    best = next(row for row in rows if row["concurrency"] == "1" and row["best"] == "True")
    assert (best["label"], best["steps"], best["topk"], best["draft_tokens"]) == (
        "steps 3 · topk 1 · draft 4", "3", "1", "4",
    )  # fmt: skip
    assert next(row for row in rows if row["value"] == "0")["steps"] == ""  # off has no point
    data = json.loads(render_json(result))
    assert data["best_points"] == {"1": {"value": 1, "steps": 3, "topk": 1, "draft_tokens": 4,
                                         "label": "steps 3 · topk 1 · draft 4"}}  # fmt: skip
    assert {point["label"] for point in data["points"]} >= {"steps 3 · topk 4 · draft 9"}
    assert data["skipped"][0]["reason"].startswith("with topk 1")
    assert TuneResult.model_validate(data).best_points[1].label == "steps 3 · topk 1 · draft 4"
