"""The fallback guard's settings field, and how a swept value becomes one edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tune.conftest import tune_result
from tui.advice.guard import file_k, guard_text
from tui.configs.document import load_document
from tui.paths import sample_configs_dir
from tui.settings import EndpointSettings
from tui.tune.plan import TunePlanError, default_key, edited, parse_int_list
from tui.tune.result import analyse, render_csv, render_markdown, render_text


def test_guard_setting_defaults_off_and_rejects_unknown_modes() -> None:
    endpoint = EndpointSettings(name="a", url="http://127.0.0.1:1")
    assert endpoint.guard == "off" and endpoint.guard_cooldown_s == 600
    assert EndpointSettings(name="a", url="http://127.0.0.1:1", guard="auto").guard == "auto"
    with pytest.raises(ValueError):
        EndpointSettings(name="a", url="http://127.0.0.1:1", guard="sometimes")  # type: ignore[arg-type]


def _lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]


def test_speculation_off_is_one_line_of_the_vllm_file() -> None:
    text = (sample_configs_dir() / "config.toml").read_text(encoding="utf-8")
    doc = load_document(text, "vllm_toml")
    assert file_k(doc) == 2
    off = guard_text(doc, None)
    assert _lines(text, off) == [("enabled = true", "enabled = false")]
    assert file_k(load_document(off, "vllm_toml")) == 0


def test_sglang_steps_keep_draft_tokens_consistent_for_topk_1() -> None:
    text = (sample_configs_dir() / "sglang_settings.json").read_text(encoding="utf-8")
    doc = load_document(text, "sglang_json", Path("settings.json"))
    key = default_key(doc)
    assert key.name == "speculative_num_steps" and key.current(doc) == 3
    after = edited(doc, key, 5, doc)
    assert after.data["speculative_num_steps"] == 5 and after.data["speculative_num_draft_tokens"] == 6
    off = edited(doc, key, 0, doc)
    assert off.data["speculative_algorithm"] is None and key.current(off) == 0
    back = edited(off, key, 2, doc)
    assert back.data["speculative_algorithm"] == "EAGLE" and back.data["speculative_num_draft_tokens"] == 3


def test_an_explicit_key_must_be_a_whole_number_in_the_file() -> None:
    doc = load_document('[draft]\nmax = 4\nname = "x"\n', "vllm_toml")
    assert default_key(doc, "draft.max").current(doc) == 4
    with pytest.raises(TunePlanError):
        default_key(doc, "draft.name")
    with pytest.raises(TunePlanError):
        default_key(doc, "draft.min")


def test_value_lists() -> None:
    assert parse_int_list("0, 2,2,4", "--values", minimum=0) == (0, 2, 4)
    with pytest.raises(TunePlanError, match="--concurrency"):
        parse_int_list("0", "--concurrency", minimum=1)
    with pytest.raises(TunePlanError):
        parse_int_list("two", "--values", minimum=0)


def test_schedule_and_break_even_from_the_best_values() -> None:
    rows = {1: (10, 20, 25), 4: (10, 14, 12), 16: (10, 9, None), 32: (10, 8, 7)}  # c: k=0, k=2, k=4
    rates = {(k, c): rate for c, row in rows.items() for k, rate in zip((0, 2, 4), row, strict=True)}
    result = analyse(tune_result(rates, original_value=2))
    assert result.best == {1: 4, 4: 2, 16: 0, 32: 0}
    assert [(s.value, s.up_to_concurrency) for s in result.schedule] == [(4, 1), (2, 4), (0, None)]
    assert result.break_even_concurrency == 16
    text = render_text(result)
    assert "k=4 up to 1, k=2 up to 4, k=0 beyond" in text and "stops paying at concurrency 16" in text
    assert "–" in text  # the unmeasured cell: a dash, never 0
    assert "| 4 | 16 |" in render_markdown(result)
    assert render_csv(result).count("\n") == 1 + 12


def test_no_break_even_when_speculation_always_pays() -> None:
    result = analyse(tune_result({(0, 1): 10, (2, 1): 20, (0, 8): 10, (2, 8): 11}, original_value=2))
    assert result.break_even_concurrency is None
    assert "pays at every measured concurrency" in render_text(result)
