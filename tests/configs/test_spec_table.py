"""vLLM's k by batch size (`num_speculative_tokens_per_batch_size`) and the vLLM settings lint:
both forms read, vLLM 0.32's lookup, schema, lint, launch and `config set`."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from tui.configs.document import load_document
from tui.configs.editing import set_raw_value
from tui.configs.errors import ConfigError
from tui.configs.launch import render_launch, vllm_cli
from tui.configs.lint import Finding, lint_document
from tui.configs.schemas import field_spec
from tui.configs.spec_table import TableError, k_for_batch, read_table, table_from_steps, table_text

TABLE = ("speculative", "num_speculative_tokens_per_batch_size")


def _toml(speculative: str, model: str = "") -> str:
    return f'[model]\nname = "Qwen/Qwen3-0.6B"\n{model}\n[speculative]\nmethod = "ngram"\n{speculative}\n'


def _lint(speculative: str, model: str = "") -> dict[str, Finding]:
    return {f.id: f for f in lint_document(load_document(_toml(speculative, model), "vllm_toml"))}


def test_both_forms_read_alike() -> None:
    assert read_table([[1, 4, 2], [5, 512, 0]]) == [(1, 4, 2), (5, 512, 0)]
    assert read_table({"1-4": 2, "5-512": 0}) == [(1, 4, 2), (5, 512, 0)]
    assert read_table({"7": 1}) == [(7, 7, 1)]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([[1, 4]], "expected [lo, hi, k]"),
        ([[0, 4, 2]], "start at 1"),
        ([[5, 4, 2]], "start is above its end"),
        ([[1, 4, -1]], "below 0"),
        ([[1, 4, True]], "whole numbers"),
        ({"1-x": 2}, "LO-HI"),
        ([], "empty"),
        ("1-4:2", "expected a list"),
    ],
)
def test_a_malformed_table_says_which_entry(value: object, words: str) -> None:
    with pytest.raises(TableError, match=re.escape(words)):
        read_table(value)


def test_the_k_of_a_batch_size_follows_vllm() -> None:
    # vLLM 0.32 build_dynamic_sd_schedule_lookup: a gap and the tail carry the previous k, clamped.
    ranges = read_table([[1, 4, 3], [8, 16, 0], [17, 32, 5]])
    assert [k_for_batch(ranges, b, 4) for b in (1, 4, 5, 7, 8, 16, 17, 100)] == [3, 3, 3, 3, 0, 0, 4, 4]
    assert table_text(ranges, 4) == "batch 1-4: k=3, 8-16: k=0, 17-32: k=4"


def test_a_table_from_a_schedule_covers_every_batch_size() -> None:
    assert table_from_steps([(2, 4), (1, 16), (0, None)], 256) == [[1, 4, 2], [5, 16, 1], [17, 256, 0]]
    assert table_from_steps([(2, 300), (0, None)], 256) == [[1, 256, 2]]


def test_schema_knows_the_table_and_the_form_edits_it_as_a_literal() -> None:
    spec = field_spec("vllm_toml", TABLE)
    assert spec is not None and spec.type == "literal"
    doc = load_document(_toml("num_speculative_tokens = 2"), "vllm_toml")
    after = set_raw_value(doc, TABLE, "[[1, 4, 2], [5, 256, 0]]")
    assert after.get(TABLE) == [[1, 4, 2], [5, 256, 0]]
    assert "num_speculative_tokens_per_batch_size = [[1, 4, 2], [5, 256, 0]]" in after.text
    # the form shows a dict as JSON; typed back, it is read (TOML writes it {"1-16" = 3})
    assert set_raw_value(doc, TABLE, '{"1-16": 2}').get(TABLE) == {"1-16": 2}
    with pytest.raises(ConfigError, match="start is above its end"):
        set_raw_value(doc, TABLE, "[[4, 1, 2]]")


@pytest.mark.parametrize(
    ("speculative", "model", "finding", "severity", "words"),
    [
        ("num_speculative_tokens = 3\nnum_speculative_tokens_per_batch_size = [[1, 8, 3], [4, 64, 0]]", "",
         "spec-table-overlap", "error", "1-8 and 4-64 overlap"),
        ("num_speculative_tokens = 3\nnum_speculative_tokens_per_batch_size = [[2, 8, 3]]", "",
         "spec-table-start", "error", "starts at batch size 2"),
        ("num_speculative_tokens = 2\nnum_speculative_tokens_per_batch_size = [[1, 8, 3], [9, 64, 1]]", "",
         "spec-table-k-above-max", "warning", "1-8: k=3 above num_speculative_tokens = 2"),
        ("num_speculative_tokens_per_batch_size = [[1, 8, 3]]", "",
         "spec-table-no-max", "error", "needs num_speculative_tokens"),
        ("num_speculative_tokens = 3\nnum_speculative_tokens_per_batch_size = [[1, 8, 3], [9, 64, 0]]",
         "data_parallel_size = 2", "spec-table-data-parallel", "warning", "data parallel > 1"),
        ('num_speculative_tokens = 3\nnum_speculative_tokens_per_batch_size = {"1-8" = 3}', "",
         "spec-table-dict-form", "info", "early draft"),
        ("num_speculative_tokens = 3\nnum_speculative_tokens_per_batch_size = [[1, 8, 3], [20, 64, 0]]", "",
         "spec-table-gap", "info", "9-19 run k=3"),
    ],
)  # fmt: skip
def test_table_lint(speculative: str, model: str, finding: str, severity: str, words: str) -> None:
    found = _lint(speculative, model)[finding]
    assert found.severity == severity and found.key == ".".join(TABLE)
    assert words in found.message
    assert found.line == 6 + speculative.count("\n")  # the table's own line


@pytest.mark.parametrize("fmt", ["cli", "yaml"])
def test_launch_renders_the_table_as_vllm_takes_it(fmt: str) -> None:
    data = load_document(
        _toml('num_speculative_tokens = 3\nnum_speculative_tokens_per_batch_size = {"5-64" = 0, "1-4" = 3}'),
        "vllm_toml",
    ).data
    if fmt == "cli":
        pairs = dict(itertools.pairwise(vllm_cli(data).argv))
        spec = json.loads(pairs["--speculative-config"])
        assert spec["num_speculative_tokens_per_batch_size"] == [[1, 4, 3], [5, 64, 0]]
    else:
        text = render_launch("vllm_toml", data, "yaml")
        assert "  num_speculative_tokens_per_batch_size:\n    - [1, 4, 3]\n    - [5, 64, 0]\n" in text


@pytest.mark.parametrize(
    ("speculative", "finding", "severity", "words"),
    [
        ('rejection_sample_method = "strict"', "renamed-value", "warning", "older vLLM's name"),
        ('rejection_sample_method = "probabilistic"', "renamed-value", "warning", "older vLLM's name"),
        ('rejection_sample_method = "greedy"', "invalid-value", "error", "standard, synthetic, block"),
        ('rejection_sample_method = "synthetic"\nsynthetic_acceptance_rates = [0.8, 0.6]',
         "benchmarking-only", "warning", "fakes acceptance"),
        ("synthetic_acceptance_length = 2.5", "invalid-value", "error", "unless rejection_sample_method"),
        ('method = "qwen9_mtp"', "unknown-method", "warning", "does not know method 'qwen9_mtp'"),
        ('method = "dflash"', "draft-model-missing", "error", "separate checkpoint"),
        ('method = "dspark"', "draft-model-missing", "error", "separate checkpoint"),
        ('method = "deepseek_mtp"', "deprecated-method", "info", "rewrites method 'deepseek_mtp' to 'mtp'"),
    ],
)  # fmt: skip
def test_dead_and_renamed_settings(speculative: str, finding: str, severity: str, words: str) -> None:
    text = _toml("num_speculative_tokens = 2").replace('method = "ngram"\n', "") + speculative + "\n"
    found = {f.id: f for f in lint_document(load_document(text, "vllm_toml"))}
    assert found[finding].severity == severity
    assert words in found[finding].message


@pytest.mark.parametrize(
    "speculative",
    [
        'rejection_sample_method = "block"',
        'method = "gemma4_mtp"',
        'method = "dflash"\nmodel = "z-lab/Qwen3-8B-DFlash"',
        "num_speculative_tokens_per_batch_size = [[1, 8, 2], [9, 64, 0]]",  # a sound table
    ],
)
def test_current_settings_pass(speculative: str) -> None:
    text = _toml("num_speculative_tokens = 2").replace('method = "ngram"\n', "") + speculative + "\n"
    ids = {f.id for f in lint_document(load_document(text, "vllm_toml"))}
    wrong = {"renamed-value", "invalid-value", "unknown-method", "draft-model-missing", "unknown-key"}
    assert not {i for i in ids if i in wrong or i.startswith("spec-table")}
