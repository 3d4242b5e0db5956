"""What the server says about one request in its response; untrusted: bad figures are dropped (None)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

Source = Literal["vllm", "llamacpp", "sglang"]
MAX_HISTOGRAM = 65  # k + 1 buckets; no server drafts more than 64 tokens a step


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value < 2**53 else None


def _amount(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _counts(value: Any, most: int = MAX_HISTOGRAM, least: int = 1) -> list[int] | None:
    """A list of `least` to `most` counts (a histogram's buckets, a per-step array), or None."""
    if not isinstance(value, list) or not least <= len(value) <= most:
        return None
    counts = [_count(item) for item in value]
    return None if any(count is None for count in counts) else [int(count or 0) for count in counts]


Count = Annotated[int | None, BeforeValidator(_count)]
Amount = Annotated[float | None, BeforeValidator(_amount)]
Histogram = Annotated[list[int] | None, BeforeValidator(_counts)]
MAX_STEPS = 1 << 20  # `detailed` per-step arrays: one entry per verification step


def _by_length(value: Any) -> dict[int, list[int]] | None:
    """vLLM's `acceptance_histogram_by_draft_length`: {"3": [...], ...}; keys are draft lengths."""
    if not isinstance(value, dict) or not 0 < len(value) <= MAX_HISTOGRAM:
        return None
    out: dict[int, list[int]] = {}
    for key, buckets in value.items():
        length = _count(int(key)) if isinstance(key, str) and key.isdigit() else None
        histogram = _counts(buckets)
        if not length or histogram is None or length >= MAX_HISTOGRAM:
            return None
        if any(histogram[length + 1 :]):  # a step cannot accept more drafts than it proposed
            return None
        out[length] = (histogram + [0] * (length + 1))[: length + 1]
    return out


Steps = Annotated[list[int] | None, BeforeValidator(lambda value: _counts(value, MAX_STEPS, 0))]
ByLength = Annotated[dict[int, list[int]] | None, BeforeValidator(_by_length)]


class VllmSpecDecoding(BaseModel):
    acceptance_histogram: Histogram = None
    num_spec_steps: Count = None
    num_accepted_draft_tokens: Count = None
    num_draft_tokens: Count = None
    num_spec_tokens: Count = None
    acceptance_histogram_by_draft_length: ByLength = None
    per_step_accepted: Steps = None
    per_step_drafted: Steps = None


class VllmMetrics(BaseModel):
    """vLLM's per-request `metrics` (`--per-request-spec-decode-metrics`, `--enable-per-request-metrics`)."""

    time_to_first_token_ms: Amount = None
    generation_time_ms: Amount = None
    queue_time_ms: Amount = None
    mean_itl_ms: Amount = None
    tokens_per_second: Amount = None
    speculative_decoding: VllmSpecDecoding | None = None


class LlamaTimings(BaseModel):
    cache_n: Count = None
    prompt_n: Count = None
    prompt_ms: Amount = None
    predicted_n: Count = None
    predicted_ms: Amount = None
    predicted_per_second: Amount = None
    draft_n: Count = None
    draft_n_accepted: Count = None


class SglangMetaInfo(BaseModel):
    prompt_tokens: Count = None
    completion_tokens: Count = None
    cached_tokens: Count = None
    e2e_latency: Amount = None
    spec_verify_ct: Count = None
    spec_num_correct_drafts: Count = None
    spec_num_proposed_drafts: Count = None
    spec_correct_drafts_histogram: Histogram = None
    spec_accept_histogram: Histogram = None  # sgl PR #18332: the same buckets under another name


def acceptance_rate(accepted: int | None, drafted: int | None) -> float | None:
    """Accepted / drafted draft tokens; None when either is unknown or nothing was drafted."""
    if drafted is None or accepted is None or drafted <= 0:
        return None
    return accepted / drafted


def mean_acceptance_length(accepted: int | None, steps: int | None) -> float | None:
    """1 + accepted / verification steps (the bonus token included); None without a step count."""
    if accepted is None or not steps:
        return None
    return 1.0 + accepted / steps


class ServerFigures(BaseModel):
    """One request's figures as its server reported them (None: the server did not say)."""

    source: Source | None = Field(None, description="which server's per-request fields these came from")
    drafted: int | None = Field(None, description="draft tokens proposed")
    accepted: int | None = Field(None, description="draft tokens accepted")
    spec_steps: int | None = Field(None, description="verification steps")
    spec_tokens: int | None = Field(None, description="configured draft length k")
    acceptance_histogram: list[int] | None = Field(None, description="j: steps accepting j drafts")
    histograms_by_length: dict[int, list[int]] | None = Field(None, description="draft length -> histogram")
    figures_note: str | None = Field(None, description="why figures the server sent were dropped")
    cached_tokens: int | None = Field(None, description="prompt tokens served from the prefix cache")
    prompt_tokens: int | None = None
    server_ttft_ms: float | None = Field(None, description="vLLM from scheduling; llama.cpp prompt_ms")
    queue_ms: float | None = None
    generation_ms: float | None = Field(None, description="first -> last token on the server")
    mean_itl_ms: float | None = None
    server_e2e_ms: float | None = None
    tokens_per_second: float | None = Field(None, description="the server's own rate")

    def decode_rate(self, output_tokens: int | None) -> float | None:
        """The server's own decode pace in tokens/s (None: it did not say)."""
        if self.source == "vllm" and self.generation_ms and output_tokens is not None and output_tokens >= 2:
            return (output_tokens - 1) / (self.generation_ms / 1000.0)
        if self.source == "vllm" and self.mean_itl_ms:
            return 1000.0 / self.mean_itl_ms
        return (self.tokens_per_second or None) if self.source in ("vllm", "llamacpp") else None

    @property
    def acceptance_rate(self) -> float | None:
        return acceptance_rate(self.accepted, self.drafted)

    @property
    def mean_acceptance_length(self) -> float | None:
        return mean_acceptance_length(self.accepted, self.spec_steps)

    @property
    def k_in_effect(self) -> float | None:
        """Draft tokens proposed per verification step (the configured k unless k varied)."""
        if self.drafted is None or not self.spec_steps:
            return None
        return self.drafted / self.spec_steps

    @property
    def empty(self) -> bool:
        return all(value is None for value in self.model_dump().values())


def _checked_histogram(histogram: list[int] | None, steps: int | None) -> list[int] | None:
    if histogram is None or (steps is not None and sum(histogram) != steps):
        return None
    return histogram


def _plausible(accepted: int | None, drafted: int | None) -> tuple[int | None, int | None]:
    """Accepted drafts can never exceed drafted ones: both are dropped when they do."""
    if accepted is not None and drafted is not None and accepted > drafted:
        return None, None
    return accepted, drafted


@dataclass
class FigureReader:
    """Collects one response's per-request figures; later objects replace earlier ones (running totals)."""

    vllm: VllmMetrics | None = None
    timings: LlamaTimings | None = None
    meta: SglangMetaInfo | None = None
    cached_tokens: int | None = None
    prompt_tokens: int | None = None

    def feed(self, event: dict[str, Any]) -> None:
        usage = event.get("usage")
        if isinstance(usage, dict):
            details = usage.get("prompt_tokens_details")
            if isinstance(details, dict) and "cached_tokens" in details:
                self.cached_tokens = _count(details["cached_tokens"])
            if "prompt_tokens" in usage:
                self.prompt_tokens = _count(usage["prompt_tokens"])
        self.vllm = _parse(VllmMetrics, event.get("metrics")) or self.vllm
        self.timings = _parse(LlamaTimings, event.get("timings")) or self.timings
        self.meta = _parse(SglangMetaInfo, event.get("meta_info")) or self.meta

    def figures(self) -> ServerFigures:
        figures = ServerFigures(cached_tokens=self.cached_tokens, prompt_tokens=self.prompt_tokens)
        if self.vllm is not None:
            _from_vllm(figures, self.vllm)
        if self.timings is not None:
            _from_llamacpp(figures, self.timings)
        if self.meta is not None:
            _from_sglang(figures, self.meta)
        return figures


M = TypeVar("M", bound=BaseModel)


def _parse(model: type[M], value: Any) -> M | None:
    if not isinstance(value, dict):
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


def _from_vllm(figures: ServerFigures, metrics: VllmMetrics) -> None:
    figures.source = "vllm"
    figures.server_ttft_ms = metrics.time_to_first_token_ms
    figures.queue_ms = metrics.queue_time_ms
    figures.generation_ms = metrics.generation_time_ms
    figures.mean_itl_ms = metrics.mean_itl_ms
    figures.tokens_per_second = metrics.tokens_per_second
    spec = metrics.speculative_decoding
    if spec is None:
        return
    figures.accepted, figures.drafted = _plausible(spec.num_accepted_draft_tokens, spec.num_draft_tokens)
    figures.spec_steps = spec.num_spec_steps
    figures.spec_tokens = spec.num_spec_tokens
    figures.acceptance_histogram = _checked_histogram(spec.acceptance_histogram, spec.num_spec_steps)
    figures.histograms_by_length = _vllm_by_length(spec, figures)


def _vllm_by_length(spec: VllmSpecDecoding, figures: ServerFigures) -> dict[int, list[int]] | None:
    """Each draft length's histogram: vLLM's split, else the per-step arrays, else a uniform k's."""
    steps = spec.num_spec_steps
    split = spec.acceptance_histogram_by_draft_length
    if split is not None and (steps is None or sum(sum(h) for h in split.values()) == steps):
        return split
    from_steps = _split_steps(spec.per_step_accepted, spec.per_step_drafted, figures)
    if from_steps is not None:
        return from_steps
    return _uniform(figures.acceptance_histogram, figures.drafted, steps, figures.spec_tokens)


def _split_steps(
    accepted: list[int] | None, drafted: list[int] | None, figures: ServerFigures
) -> dict[int, list[int]] | None:
    """Histograms per draft length from the per-step arrays, when they agree with the totals."""
    if accepted is None or drafted is None or len(accepted) != len(drafted):
        return None
    pairs = [(a, d) for a, d in zip(accepted, drafted, strict=True) if d > 0]
    if any(a > d or d >= MAX_HISTOGRAM for a, d in pairs):
        return None
    proposed, taken = sum(d for _, d in pairs), sum(a for a, _ in pairs)
    said = ((figures.spec_steps, len(pairs)), (figures.drafted, proposed), (figures.accepted, taken))
    if any(total is not None and total != ours for total, ours in said):
        return None
    out: dict[int, list[int]] = {}
    for a, d in pairs:
        out.setdefault(d, [0] * (d + 1))[a] += 1
    return dict(sorted(out.items())) or None


def _uniform(
    histogram: list[int] | None, drafted: int | None, steps: int | None, k: int | None
) -> dict[int, list[int]] | None:
    """The histogram as the one draft length's, when every step drafted k tokens."""
    if histogram is None or drafted is None or not steps or not k or drafted != steps * k:
        return None
    return {k: histogram} if len(histogram) == k + 1 else None


def _from_llamacpp(figures: ServerFigures, timings: LlamaTimings) -> None:
    figures.source = "llamacpp"
    figures.accepted, figures.drafted = _plausible(timings.draft_n_accepted, timings.draft_n)
    if figures.cached_tokens is None:
        figures.cached_tokens = timings.cache_n
    if figures.prompt_tokens is None and timings.cache_n is not None and timings.prompt_n is not None:
        figures.prompt_tokens = timings.cache_n + timings.prompt_n
    figures.server_ttft_ms = timings.prompt_ms  # prompt processing: the server's share of TTFT
    figures.generation_ms = timings.predicted_ms
    if timings.predicted_ms is not None and timings.predicted_n is not None and timings.predicted_n > 1:
        figures.mean_itl_ms = timings.predicted_ms / (timings.predicted_n - 1)
    figures.tokens_per_second = timings.predicted_per_second
    if not figures.tokens_per_second and timings.predicted_ms and timings.predicted_n:
        figures.tokens_per_second = timings.predicted_n / (timings.predicted_ms / 1000.0)


def _from_sglang(figures: ServerFigures, meta: SglangMetaInfo) -> None:
    figures.source = "sglang"
    proposed = meta.spec_num_proposed_drafts
    figures.accepted, figures.drafted = _plausible(meta.spec_num_correct_drafts, proposed)
    figures.spec_steps = meta.spec_verify_ct
    sent = meta.spec_correct_drafts_histogram or meta.spec_accept_histogram
    histogram, figures.figures_note = _sglang_identities(sent, meta, figures.accepted, proposed)
    figures.acceptance_histogram = histogram
    if histogram is not None:
        figures.spec_tokens = len(histogram) - 1  # the block size: the largest draft a step can make
        figures.histograms_by_length = _uniform(
            histogram, figures.drafted, meta.spec_verify_ct, figures.spec_tokens
        )
    if meta.cached_tokens is not None:
        figures.cached_tokens = meta.cached_tokens
    if meta.prompt_tokens is not None:
        figures.prompt_tokens = meta.prompt_tokens
    figures.server_e2e_ms = None if meta.e2e_latency is None else meta.e2e_latency * 1000.0


def _sglang_identities(
    histogram: list[int] | None, meta: SglangMetaInfo, correct: int | None, proposed: int | None
) -> tuple[list[int] | None, str | None]:
    """The drafts histogram when it agrees with the counts (sgl PR #33518), else None and why."""
    if histogram is None:
        return None, None
    steps = meta.spec_verify_ct
    if steps is not None and sum(histogram) != steps:
        return None, f"drafts histogram dropped: its {sum(histogram)} steps are not spec_verify_ct {steps}"
    drafts = sum(index * count for index, count in enumerate(histogram))
    if correct is not None and drafts != correct:
        return None, f"drafts histogram dropped: it holds {drafts} correct drafts, not {correct}"
    if proposed is not None and steps is not None and proposed > steps * (len(histogram) - 1):
        return None, f"drafts histogram dropped: {proposed} proposals exceed {steps} steps of its block size"
    return histogram, None


def figures_from_body(body: Any) -> ServerFigures:
    reader = FigureReader()
    if isinstance(body, dict):
        reader.feed(body)
    return reader.figures()


# ---- /metrics counters to reconcile with --------------------------------------------------------

COUNTERS: dict[str, dict[str, str]] = {
    "draft_tokens": {
        "vllm": "vllm:spec_decode_num_draft_tokens_total",
        "llamacpp": "llamacpp:spec_decode_num_draft_tokens_total",
    },
    "accepted_tokens": {
        "vllm": "vllm:spec_decode_num_accepted_tokens_total",
        "llamacpp": "llamacpp:spec_decode_num_accepted_tokens_total",
    },
    "verify_steps": {
        "vllm": "vllm:spec_decode_num_drafts_total",
        "llamacpp": "llamacpp:spec_decode_num_drafts_total",
        "sglang": "sglang:spec_verify_calls_total",
    },
}


def counter_deltas(
    first: Sequence[Any] | None, last: Sequence[Any] | None, backend: str | None
) -> dict[str, float | None]:
    """Increase of the draft counters between two scrapes (None: not on the page, or it went down)."""
    out: dict[str, float | None] = {}
    for quantity, names in COUNTERS.items():
        name = names.get(backend or "")
        if name is None or first is None or last is None:
            out[quantity] = None
            continue
        before = [s.value for s in first if s.name == name and math.isfinite(s.value)]
        after = [s.value for s in last if s.name == name and math.isfinite(s.value)]
        increase = sum(after) - sum(before) if before and after else None
        out[quantity] = increase if increase is not None and increase >= 0 else None
    return out
