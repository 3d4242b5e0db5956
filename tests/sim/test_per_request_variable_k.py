"""The simulator's per-request figures when steps draft different lengths (a per-batch-size table or
adaptive steps): vLLM's histogram per draft length and `detailed` arrays come from each step's own
draft; SGLang's proposed drafts count what was proposed, so its identities hold."""

from __future__ import annotations

import random
from types import SimpleNamespace

from tui.bench.server_figures import figures_from_body
from tui.sim.engine import SimRequest, StepRecord
from tui.sim.per_request import ResponseOptions, StepLog, observers, sglang_meta_info, vllm_metrics

STEPS = [(1, 1), (2, 3), (0, 1), (3, 3)]  # (accepted, drafted) per verification step


def _request_and_log() -> tuple[SimRequest, StepLog]:
    request = SimRequest(
        request_id="r", number=0, endpoint="chat", prompt_text="p", prompt_tokens=4, hashes=[],
        max_tokens=16, max_tokens_given=True, output=[], natural_stop=False, stop_reason=None,
        acceptance=[0.5] * 3, rng=random.Random(0), temperature=0.0, arrival=0.0, not_before=0.0,
        accepted_per_pos=[0, 0, 0],
    )  # fmt: skip
    log = StepLog()
    for accepted, drafted in STEPS:
        request.drafted += drafted
        request.accepted += accepted
        request.verify_steps += 1
        for position in range(accepted):
            request.accepted_per_pos[position] += 1
        record = StepRecord(request, accepted + 1, drafted, accepted, False, 0.0)
        log.step_done(SimpleNamespace(decode_records=[record]))  # type: ignore[arg-type]
    return request, log


def test_summary_level_keeps_a_step_log_for_the_split() -> None:
    assert observers(ResponseOptions(spec_metrics="summary"))[1] is not None
    assert observers(ResponseOptions())[1] is None


def test_vllm_histogram_per_draft_length_and_detailed_arrays() -> None:
    request, log = _request_and_log()
    spec = vllm_metrics(request, ResponseOptions(spec_metrics="detailed"), log)["speculative_decoding"]
    assert spec["acceptance_histogram_by_draft_length"] == {"1": [1, 1], "3": [0, 0, 1, 1]}
    assert spec["per_step_drafted"] == [1, 3, 1, 3] and spec["num_draft_tokens"] == 8
    figures = figures_from_body({"metrics": {"speculative_decoding": spec}})
    assert figures.histograms_by_length == {1: [1, 1], 3: [0, 0, 1, 1]} and figures.k_in_effect == 2.0


def test_sglang_proposed_drafts_are_what_the_steps_proposed() -> None:
    request, _ = _request_and_log()
    meta = sglang_meta_info(request, "r", details=True)
    assert (meta["spec_num_proposed_drafts"], meta["spec_num_correct_drafts"]) == (8, 6)
    figures = figures_from_body({"text": "x", "meta_info": meta})
    assert figures.figures_note is None and figures.acceptance_histogram == [1, 1, 1, 1]
    assert figures.histograms_by_length is None  # mixed lengths: SGLang does not say which
