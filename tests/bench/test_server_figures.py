"""Per-request server figures parsed from real response shapes, one acceptance rule, and variable k:
per-position rates per draft length, or a mixed view; the k in effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.bench import explain
from tui.bench.explain import MIXED, RequestFigures, acceptance
from tui.bench.report.text import acceptance_lines
from tui.bench.server_figures import (
    FigureReader,
    ServerFigures,
    acceptance_rate,
    figures_from_body,
    mean_acceptance_length,
)

SAMPLES = Path("/work/shared/reference/samples/llamacpp")

# The example of reference per-request.md (vLLM `metrics`), verbatim; tests/reference streams it.
VLLM_METRICS = {
    "time_to_first_token_ms": 85.2,
    "generation_time_ms": 1240.5,
    "queue_time_ms": 12.3,
    "mean_itl_ms": 9.1,
    "tokens_per_second": 103.2,
    "speculative_decoding": {
        "mean_acceptance_length": 1.2325581395348837,
        "draft_acceptance_rate": 0.07751937984496124,
        "acceptance_histogram": [39, 1, 0, 3],
        "acceptance_histogram_by_draft_length": {"3": [39, 1, 0, 3]},
        "num_spec_steps": 43,
        "num_accepted_draft_tokens": 10,
        "num_draft_tokens": 129,
        "num_spec_tokens": 3,
    },
}


def test_llamacpp_completion_body() -> None:  # its streams: tests/reference/test_streams_openai_shapes.py
    body = json.loads((SAMPLES / "completion.json").read_text(encoding="utf-8"))
    figures = figures_from_body(body)
    assert (figures.drafted, figures.accepted, figures.cached_tokens, figures.prompt_tokens) == (56, 56, 2, 8)
    assert figures.server_ttft_ms == 2.979 and figures.generation_ms == 44.285
    assert figures.mean_itl_ms == pytest.approx(44.285 / 63)


def test_no_draft_fields_means_unknown_not_zero() -> None:
    figures = figures_from_body(
        {"timings": {"cache_n": 0, "prompt_n": 5, "predicted_n": 9, "predicted_ms": 3.0}}
    )
    assert figures.drafted is None and figures.accepted is None and figures.acceptance_rate is None
    usage = {"prompt_tokens": 5, "prompt_tokens_details": None}
    assert figures_from_body({"usage": usage}).cached_tokens is None


def test_sglang_meta_info_running_values_keep_the_last() -> None:
    reader = FigureReader()
    reader.feed({"text": "a", "meta_info": {"spec_verify_ct": 1, "spec_num_correct_drafts": 1}})
    reader.feed(
        {
            "text": "abc",
            "meta_info": {
                "prompt_tokens": 20,
                "completion_tokens": 30,
                "cached_tokens": 16,
                "e2e_latency": 0.5,
                "spec_verify_ct": 10,
                "spec_accept_length": 3.0,
                "spec_accept_rate": 0.5,
                "spec_num_correct_drafts": 20,
                "spec_num_proposed_drafts": 40,
                "spec_correct_drafts_histogram": [2, 2, 2, 2, 2],
            },
        }
    )
    figures = reader.figures()
    assert figures.source == "sglang"
    assert (figures.drafted, figures.accepted, figures.spec_steps, figures.spec_tokens) == (40, 20, 10, 4)
    assert figures.mean_acceptance_length == 3.0 and figures.server_e2e_ms == 500.0
    assert (figures.cached_tokens, figures.prompt_tokens) == (16, 20)


@pytest.mark.parametrize(
    ("drafted", "accepted", "steps"),
    [(-3, 1, 1), ("9", 1, 3), (3, 9, 1), (True, 0, 1)],  # (3, 9, 1): more accepted than drafted
)
def test_untrusted_counts_are_dropped_not_guessed(drafted: object, accepted: int, steps: int) -> None:
    spec = {"num_draft_tokens": drafted, "num_accepted_draft_tokens": accepted, "num_spec_steps": steps}
    figures = figures_from_body({"metrics": {"speculative_decoding": spec, "queue_time_ms": float("nan")}})
    assert figures.drafted is None and figures.acceptance_rate is None
    assert figures.queue_ms is None


def test_a_histogram_that_does_not_add_up_is_dropped() -> None:
    spec = {**VLLM_METRICS["speculative_decoding"], "acceptance_histogram": [1, 1, 1, 1]}
    figures = figures_from_body({"metrics": {"speculative_decoding": spec}})
    assert figures.acceptance_histogram is None and figures.drafted == 129
    junk = figures_from_body({"metrics": "nope", "timings": [1], "meta_info": {"spec_verify_ct": {"x": 1}}})
    assert junk.drafted is None and junk.spec_steps is None


CASES = [  # (accepted, drafted, steps, acceptance, mean length)
    (30, 40, 20, 0.75, 2.5),
    (0, 40, 20, 0.0, 1.0),  # drafted and none accepted is a known 0
    (0, 0, 0, None, None),  # nothing drafted: unknown, not 0%
    (None, 40, 20, None, None),
    (30, None, None, None, None),
    (30, 40, None, 0.75, None),  # no step count: no mean length
]


@pytest.mark.parametrize(("accepted", "drafted", "steps", "rate", "length"), CASES)
def test_server_and_explained_figures_derive_alike(
    accepted: int | None, drafted: int | None, steps: int | None, rate: float | None, length: float | None
) -> None:
    server = ServerFigures(accepted=accepted, drafted=drafted, spec_steps=steps)
    request = explain.RequestFigures(ok=True, accepted=accepted, drafted=drafted, spec_steps=steps)
    assert server.acceptance_rate == request.acceptance_rate == acceptance_rate(accepted, drafted) == rate
    assert server.mean_acceptance_length == request.mean_acceptance_length == length
    assert mean_acceptance_length(accepted, steps) == length


def test_an_arm_pools_by_the_same_rule() -> None:
    requests = [
        explain.RequestFigures(ok=True, accepted=30, drafted=40, spec_steps=20),
        explain.RequestFigures(ok=True, accepted=10, drafted=40, spec_steps=20),
    ]
    pooled = explain.acceptance(requests)
    assert pooled.pooled == acceptance_rate(40, 80)
    assert pooled.mean_length == mean_acceptance_length(40, 40)
    nothing = explain.acceptance([explain.RequestFigures(ok=True, accepted=0, drafted=0, spec_steps=0)])
    assert nothing.pooled is None and nothing.mean_length is None


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
