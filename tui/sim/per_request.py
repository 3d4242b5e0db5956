"""Per-request figures in the simulator's responses, shaped as the real servers put them (vLLM's `metrics`,
llama.cpp's `timings`, SGLang's `meta_info`), from the same `SimRequest` fields the /metrics recorders add up:
summed over requests they equal the /metrics delta to the token."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Literal

from tui.sim.engine import EngineObserver, SimRequest, StepReport

SpecMetrics = Literal["none", "summary", "detailed"]


@dataclass(frozen=True)
class ResponseOptions:
    """Which per-request figures the simulated server puts in its responses (server start-up flags)."""

    spec_metrics: SpecMetrics = "none"  # vLLM --per-request-spec-decode-metrics
    timing_metrics: bool = False  # vLLM --enable-per-request-metrics
    prompt_tokens_details: bool = False  # vLLM --enable-prompt-tokens-details / SGLang --enable-cache-report


# ---- per-step record (with any spec_metrics) ------------------------------------------------------


class StepLog(EngineObserver):
    """(accepted, drafted) per verification step of every request: vLLM's `detailed` arrays and
    `acceptance_histogram_by_draft_length` (steps of a per-batch-size table draft different lengths)."""

    def __init__(self) -> None:
        self.steps: weakref.WeakKeyDictionary[SimRequest, list[tuple[int, int]]] = weakref.WeakKeyDictionary()

    def step_done(self, report: StepReport) -> None:
        for record in report.decode_records:
            if record.drafted:
                self.steps.setdefault(record.request, []).append((record.accepted, record.drafted))


# ---- shared figures -------------------------------------------------------------------------------


def histograms_by_length(record: list[tuple[int, int]]) -> dict[str, list[int]]:
    """Draft length (a string, as vLLM keys it) -> its steps' histogram, length + 1 buckets."""
    out: dict[int, list[int]] = {}
    for accepted, drafted in record:
        out.setdefault(drafted, [0] * (drafted + 1))[min(accepted, drafted)] += 1
    return {str(length): histogram for length, histogram in sorted(out.items())}


def acceptance_histogram(request: SimRequest) -> list[int]:
    """Index j = verification steps that accepted exactly j drafts (bonus excluded), k+1 long; exact since
    acceptance stops at the first rejection (`accepted_per_pos[i]`: steps that accepted more than i)."""
    per_pos = list(request.accepted_per_pos)
    k = len(per_pos)
    above = [request.verify_steps, *per_pos, 0]  # above[j] = steps that accepted at least j drafts
    return [above[j] - above[j + 1] for j in range(k + 1)]


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _ms(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return round(max(0.0, end - start) * 1000.0, 3)


def vllm_metrics(request: SimRequest, options: ResponseOptions, steps: StepLog | None) -> dict[str, Any]:
    """vLLM's top-level `metrics` object for one request (empty when no flag asks for it)."""
    body: dict[str, Any] = {}
    k = len(request.accepted_per_pos)
    if options.timing_metrics:
        generation_ms = _ms(request.first_token_at, request.last_token_at)
        decode_tokens = max(0, request.generated - 1)
        itl_ms = generation_ms / decode_tokens if generation_ms is not None and decode_tokens else None
        body.update(
            time_to_first_token_ms=_ms(request.scheduled_at, request.first_token_at),
            generation_time_ms=generation_ms,
            queue_time_ms=_ms(request.arrival, request.scheduled_at),
            mean_itl_ms=itl_ms,
            tokens_per_second=decode_tokens / generation_ms * 1000.0 if generation_ms else None,
        )
    if options.spec_metrics != "none" and k:
        histogram = acceptance_histogram(request)
        mean_length = 1.0 + request.accepted / request.verify_steps if request.verify_steps else None
        spec: dict[str, Any] = {
            "mean_acceptance_length": mean_length,
            "draft_acceptance_rate": _ratio(request.accepted, request.drafted),
            "acceptance_histogram": histogram,
            "acceptance_histogram_by_draft_length": {str(k): histogram},  # every step drafted k
            "num_spec_steps": request.verify_steps,
            "num_accepted_draft_tokens": request.accepted,
            "num_draft_tokens": request.drafted,
            "num_spec_tokens": k,
        }
        record = steps.steps.get(request) if steps is not None else None
        if record is not None:
            spec["acceptance_histogram_by_draft_length"] = histograms_by_length(record)
        if options.spec_metrics == "detailed":
            record = record or []
            spec["per_step_accepted"] = [accepted for accepted, _ in record]
            spec["per_step_drafted"] = [drafted for _, drafted in record]
        body["speculative_decoding"] = spec
    return body


def decorate(
    body: dict[str, Any],
    flavor: str,
    request: SimRequest,
    options: ResponseOptions,
    steps: StepLog | None = None,
) -> dict[str, Any]:
    """Add the per-request figures to a final usage chunk or a full (non-streamed) response."""
    usage = body.get("usage")
    if options.prompt_tokens_details and flavor != "llamacpp" and isinstance(usage, dict):
        usage["prompt_tokens_details"] = {"cached_tokens": request.cached_tokens}
    if flavor == "vllm":
        metrics = vllm_metrics(request, options, steps)
        if metrics:
            body["metrics"] = metrics
    return body


# ---- SGLang native /generate ----------------------------------------------------------------------


def _finish(request: SimRequest) -> dict[str, Any] | None:
    reason = request.finish_reason
    if reason is None:
        return None
    if reason == "stop":
        if request.stop_reason is not None:
            return {"type": "stop", "matched": request.stop_reason}
        return {"type": "stop", "matched": 151645}  # the EOS token id, as SGLang reports it
    if reason == "length":
        return {"type": "length", "length": request.generated}
    return {"type": "abort", "message": "client disconnected"}


def sglang_meta_info(request: SimRequest, rid: str, details: bool = False) -> dict[str, Any]:
    """`meta_info` of a native /generate response; the drafts details only when `details` asks."""
    k = len(request.accepted_per_pos)
    meta: dict[str, Any] = {
        "id": rid,
        "finish_reason": _finish(request),
        "prompt_tokens": request.prompt_tokens,
        "weight_version": "default",
        "completion_tokens": request.generated,
        "cached_tokens": request.cached_tokens,
    }
    if k:
        proposed = request.drafted  # topk = 1: each step proposes the steps in use (k, or an adaptive tier)
        meta.update(
            spec_accept_rate=_ratio(request.accepted, proposed) or 0.0,
            spec_accept_length=(request.accepted + request.verify_steps) / request.verify_steps
            if request.verify_steps
            else 1.0,
            spec_verify_ct=request.verify_steps,
        )
        if details:
            meta.update(
                spec_num_correct_drafts=request.accepted,
                spec_num_proposed_drafts=proposed,
                spec_correct_drafts_histogram=acceptance_histogram(request),
            )
    finished = request.finished_at
    if finished is not None:
        meta["e2e_latency"] = max(0.0, finished - request.arrival)
    return meta
