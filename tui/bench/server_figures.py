"""What the server says about one request in its own response (reference `per-request.md`).

* vLLM: the top-level `metrics` object (final usage chunk when streaming, body otherwise):
  `speculative_decoding` and the timing fields;
* llama.cpp: `timings` (`draft_n`, `draft_n_accepted`, `prompt_ms`, `predicted_ms`, `cache_n`);
* SGLang native `/generate`: `meta_info` (`spec_verify_ct`, `spec_accept_length`, the drafts histogram,
  `cached_tokens`, ...);
* any server: `usage.prompt_tokens_details.cached_tokens`.

Everything is untrusted: a field of the wrong type, negative or not finite is dropped (None), never
guessed; a histogram that does not add up to its step count is dropped. Absent figures stay None (a
llama.cpp request without `draft_n` may not have drafted at all, which is not the same as 0 accepted).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

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


def _histogram(value: Any) -> list[int] | None:
    if not isinstance(value, list) or not 0 < len(value) <= MAX_HISTOGRAM:
        return None
    counts = [_count(item) for item in value]
    return None if any(count is None for count in counts) else [int(count or 0) for count in counts]


Count = Annotated[int | None, BeforeValidator(_count)]
Amount = Annotated[float | None, BeforeValidator(_amount)]
Histogram = Annotated[list[int] | None, BeforeValidator(_histogram)]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class VllmSpecDecoding(_Lenient):
    mean_acceptance_length: Amount = None
    draft_acceptance_rate: Amount = None
    acceptance_histogram: Histogram = None
    num_spec_steps: Count = None
    num_accepted_draft_tokens: Count = None
    num_draft_tokens: Count = None
    num_spec_tokens: Count = None


class VllmMetrics(_Lenient):
    """vLLM's per-request `metrics` (`--per-request-spec-decode-metrics`, `--enable-per-request-metrics`)."""

    time_to_first_token_ms: Amount = None
    generation_time_ms: Amount = None
    queue_time_ms: Amount = None
    mean_itl_ms: Amount = None
    tokens_per_second: Amount = None
    speculative_decoding: VllmSpecDecoding | None = None


class LlamaTimings(_Lenient):
    cache_n: Count = None
    prompt_n: Count = None
    prompt_ms: Amount = None
    predicted_n: Count = None
    predicted_ms: Amount = None
    predicted_per_second: Amount = None
    draft_n: Count = None
    draft_n_accepted: Count = None


class SglangMetaInfo(_Lenient):
    prompt_tokens: Count = None
    completion_tokens: Count = None
    cached_tokens: Count = None
    e2e_latency: Amount = None
    spec_verify_ct: Count = None
    spec_accept_length: Amount = None
    spec_accept_rate: Amount = None
    spec_num_correct_drafts: Count = None
    spec_num_proposed_drafts: Count = None
    spec_correct_drafts_histogram: Histogram = None


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

    model_config = ConfigDict(extra="ignore")

    source: Source | None = Field(None, description="which server's per-request fields these came from")
    drafted: int | None = Field(None, description="draft tokens proposed")
    accepted: int | None = Field(None, description="draft tokens accepted")
    spec_steps: int | None = Field(None, description="verification steps")
    spec_tokens: int | None = Field(None, description="configured draft length k")
    acceptance_histogram: list[int] | None = Field(
        None, description="index j = steps that accepted exactly j drafts (bonus excluded)"
    )
    cached_tokens: int | None = Field(None, description="prompt tokens served from the prefix cache")
    prompt_tokens: int | None = None
    server_ttft_ms: float | None = Field(
        None, description="server-side TTFT (vLLM from scheduling; llama.cpp prompt_ms)"
    )
    queue_ms: float | None = None
    generation_ms: float | None = Field(None, description="first -> last token on the server")
    mean_itl_ms: float | None = None
    server_e2e_ms: float | None = None
    tokens_per_second: float | None = Field(
        None, description="the server's own rate (vLLM tokens_per_second; llama.cpp predicted_per_second)"
    )

    def decode_rate(self, output_tokens: int | None) -> float | None:
        """The server's own decode pace of this request in tokens/s (None: it did not say): vLLM
        (tokens - 1) / generation_time_ms, else 1 / mean_itl_ms, else tokens_per_second; llama.cpp
        predicted_per_second, else predicted tokens / predicted_ms."""
        if self.source == "vllm":
            if self.generation_ms and output_tokens is not None and output_tokens >= 2:
                return (output_tokens - 1) / (self.generation_ms / 1000.0)
            if self.mean_itl_ms:
                return 1000.0 / self.mean_itl_ms
            return self.tokens_per_second or None
        if self.source == "llamacpp":
            return self.tokens_per_second or None
        return None

    @property
    def acceptance_rate(self) -> float | None:
        return acceptance_rate(self.accepted, self.drafted)

    @property
    def mean_acceptance_length(self) -> float | None:
        return mean_acceptance_length(self.accepted, self.spec_steps)

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


class FigureReader:
    """Collects the per-request figures from the events of one response (stream chunks or one body).

    Later objects replace earlier ones: llama.cpp with `timings_per_token` and SGLang send running
    values on every chunk, and the last one holds the totals."""

    def __init__(self) -> None:
        self.vllm: VllmMetrics | None = None
        self.timings: LlamaTimings | None = None
        self.meta: SglangMetaInfo | None = None
        self.cached_tokens: int | None = None
        self.prompt_tokens: int | None = None

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
    histogram = _checked_histogram(meta.spec_correct_drafts_histogram, meta.spec_verify_ct)
    figures.acceptance_histogram = histogram
    if histogram is not None:
        figures.spec_tokens = len(histogram) - 1
    if meta.cached_tokens is not None:
        figures.cached_tokens = meta.cached_tokens
    if meta.prompt_tokens is not None:
        figures.prompt_tokens = meta.prompt_tokens
    if meta.e2e_latency is not None:
        figures.server_e2e_ms = meta.e2e_latency * 1000.0


def figures_from_body(body: Any) -> ServerFigures:
    """The figures of a non-streamed response body."""
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
    """Increase of the draft counters between two scrapes' samples (None: not on the page, or it
    went down, i.e. the server restarted or reset its counters in between)."""
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
