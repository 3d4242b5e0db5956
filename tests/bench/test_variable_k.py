"""Variable k in bursts: per-position rates per draft length, or a mixed view; the k in effect."""

from __future__ import annotations

import pytest

from tui.bench.explain import MIXED, RequestFigures, acceptance
from tui.bench.report.text import acceptance_lines
from tui.bench.server_figures import ServerFigures, figures_from_body

# Two steps of 1 draft (1 accepted, 0 accepted) and two of 3 drafts (2 accepted, 3 accepted): under a
# per-batch-size table, the summary histogram alone cannot tell these apart from other mixes.
PER_STEP = {"per_step_drafted": [1, 3, 1, 3], "per_step_accepted": [1, 2, 0, 3]}
SUMMARY = {
    "acceptance_histogram": [1, 1, 1, 1],
    "num_spec_steps": 4,
    "num_accepted_draft_tokens": 6,
    "num_draft_tokens": 8,
    "num_spec_tokens": 3,
}


def _vllm(spec: dict) -> ServerFigures:
    return figures_from_body({"choices": [], "metrics": {"speculative_decoding": spec}})


def _request(server: ServerFigures) -> RequestFigures:
    return RequestFigures(ok=True, **dict(server))


@pytest.mark.parametrize(
    "split",
    [PER_STEP, {"acceptance_histogram_by_draft_length": {"1": [1, 1, 0, 0], "3": [0, 0, 1, 1]}}],
    ids=["detailed-per-step-arrays", "histogram-by-draft-length-padded-to-k+1"],
)
def test_vllm_split_by_draft_length(split: dict) -> None:
    figures = _vllm({**SUMMARY, **split})
    assert figures.histograms_by_length == {1: [1, 1], 3: [0, 0, 1, 1]}
    assert figures.k_in_effect == 2.0 and figures.spec_tokens == 3


@pytest.mark.parametrize(
    "bad",
    [
        {"per_step_drafted": [1, 3, 1], "per_step_accepted": [1, 2, 0]},  # not every step
        {"per_step_drafted": [1, 3, 1, 3], "per_step_accepted": [2, 2, 0, 2]},  # accepted > drafted
        {"acceptance_histogram_by_draft_length": {"1": [0, 0, 4]}},  # 2 accepted of 1 drafted
    ],
)
def test_vllm_split_that_disagrees_is_dropped(bad: dict) -> None:
    assert _vllm({**SUMMARY, **bad}).histograms_by_length is None


def test_uniform_k_keeps_one_histogram() -> None:
    spec = {**SUMMARY, "num_draft_tokens": 12, "acceptance_histogram": [1, 1, 1, 1]}
    assert _vllm(spec).histograms_by_length == {3: [1, 1, 1, 1]}


def test_burst_gives_per_position_per_draft_length_and_the_k_in_effect() -> None:
    figures = acceptance([_request(_vllm({**SUMMARY, **PER_STEP}))] * 2)
    assert figures.per_position is None
    assert figures.per_position_by_length == {1: [0.5], 3: [1.0, 1.0, 0.5]}
    assert figures.k_in_effect == 2.0 and figures.k_configured == 3
    lines = acceptance_lines("A", figures)
    assert "A k in effect: 2 drafts per step (configured 3)" in lines
    assert "A acceptance by position, drafts of 3: 100% 100% 50%" in lines


def test_burst_without_a_split_says_per_position_is_mixed() -> None:
    figures = acceptance([_request(_vllm(SUMMARY))])
    assert figures.per_position is None and figures.per_position_by_length is None
    assert figures.per_position_note is not None and figures.per_position_note.startswith(MIXED)
    assert any("per position: mixed" in line for line in acceptance_lines("B", figures))


def test_static_k_burst_keeps_the_pooled_per_position() -> None:
    spec = {**SUMMARY, "num_draft_tokens": 12}
    figures = acceptance([_request(_vllm(spec))])
    assert figures.per_position == [0.75, 0.5, 0.25] and figures.per_position_note is None


# ---- SGLang return_spec_tokens_details -----------------------------------------------------------

META = {
    "spec_verify_ct": 4,
    "spec_num_correct_drafts": 6,
    "spec_num_proposed_drafts": 8,  # adaptive: fewer than 4 steps x block size 3
    "spec_correct_drafts_histogram": [1, 1, 1, 1],
}


def _sglang(meta: dict) -> ServerFigures:
    return figures_from_body({"text": "x", "meta_info": meta})


def test_sglang_details_read_and_adaptive_steps_say_mixed() -> None:
    figures = _sglang(META)
    assert (figures.drafted, figures.accepted, figures.spec_steps, figures.spec_tokens) == (8, 6, 4, 3)
    assert figures.acceptance_histogram == [1, 1, 1, 1] and figures.figures_note is None
    assert figures.histograms_by_length is None  # drafts of several lengths, not said which
    burst = acceptance([_request(figures)])
    assert burst.k_in_effect == 2.0 and burst.per_position is None
    assert burst.per_position_note is not None and burst.per_position_note.startswith(MIXED)


def test_sglang_spec_accept_histogram_is_read_too() -> None:
    meta = {**META, "spec_num_proposed_drafts": 12}
    meta["spec_accept_histogram"] = meta.pop("spec_correct_drafts_histogram")
    figures = _sglang(meta)
    assert figures.histograms_by_length == {3: [1, 1, 1, 1]}
    assert acceptance([_request(figures)]).per_position == [0.75, 0.5, 0.25]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"spec_verify_ct": 5}, "not spec_verify_ct 5"),
        ({"spec_num_correct_drafts": 5}, "not 5"),
        ({"spec_num_proposed_drafts": 13}, "13 proposals exceed"),
    ],
)
def test_sglang_histogram_failing_an_identity_is_dropped_with_why(change: dict, why: str) -> None:
    figures = _sglang({**META, **change})
    assert figures.acceptance_histogram is None
    assert figures.figures_note is not None and why in figures.figures_note
