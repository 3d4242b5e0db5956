"""Request bodies and responses of the OpenAI-compatible API per server flavour, with the per-request figures
shaped as the real servers put them (vLLM's `metrics`, llama.cpp's `timings`, SGLang's `meta_info`), from the
same `SimRequest` fields the /metrics recorders add up: summed over requests they equal the /metrics delta to
the token."""

from __future__ import annotations

import secrets
import string
import time
import weakref
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tui.sim.engine import EngineObserver, SimRequest, StepReport
from tui.sim.tokens import count_tokens

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


# ---- bodies and chunks ----------------------------------------------------------------------------


FLAVORS: tuple[str, ...] = ("vllm", "sglang", "llamacpp")
_ALNUM = string.ascii_letters + string.digits


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class Sampling(BaseModel):
    """The sampling fields of every body (OpenAI's at the top level, SGLang's in `sampling_params`)."""

    model_config = ConfigDict(extra="allow")
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    stop: str | list[str] | None = None
    ignore_eos: bool = False
    seed: int | None = None

    def engine_args(self) -> dict[str, Any]:
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return {
            "temperature": self.temperature,
            "seed": self.seed,
            "stop": stop,
            "ignore_eos": self.ignore_eos,
        }


class _Common(Sampling):
    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=1)

    @property
    def sampling(self) -> Sampling:
        return self

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class CompletionBody(_Common):
    prompt: str | list[str] | list[int]

    def request(self) -> tuple[str, int | None, int | None]:
        """The prompt as text, its token count when the client sent token ids, and the token limit."""
        if isinstance(self.prompt, str):
            return self.prompt, None, self.max_tokens
        if all(isinstance(item, int) for item in self.prompt):
            return " ".join(str(item) for item in self.prompt), len(self.prompt), self.max_tokens
        if len(self.prompt) != 1:
            raise ValueError("prompt: only one prompt per request is supported")
        return str(self.prompt[0]), None, self.max_tokens


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = "text"
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text or "" for part in self.content)
        return self.content or ""


class ChatBody(_Common):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)

    def request(self) -> tuple[str, int | None, int | None]:
        """What the messages say (it drives the content factor and the output), the token count of the chat
        template (ChatML style, so it includes the role markers), and the token limit."""
        turns = [f"<|im_start|>{message.role}\n{message.text()}<|im_end|>" for message in self.messages]
        template = "\n".join([*turns, "<|im_start|>assistant\n"])
        content = "\n".join(message.text() for message in self.messages)
        return content, count_tokens(template), self.max_completion_tokens or self.max_tokens


class SamplingParams(Sampling):
    max_new_tokens: int | None = Field(default=128, ge=1)
    seed: int | None = Field(default=None, alias="sampling_seed")


class GenerateBody(BaseModel):
    """The body of SGLang's native `POST /generate` (one prompt as text)."""

    model_config = ConfigDict(extra="allow")
    text: str
    sampling_params: SamplingParams = Field(default_factory=SamplingParams)
    stream: bool = False
    rid: str | None = None
    return_spec_tokens_details: bool = False  # sgl PR #33518: the drafts counts and histogram too

    @property
    def sampling(self) -> Sampling:
        return self.sampling_params

    def request(self) -> tuple[str, int | None, int | None]:
        return self.text, count_tokens(self.text), self.sampling_params.max_new_tokens


BODIES: dict[str, type[CompletionBody | ChatBody | GenerateBody]] = {
    "completion": CompletionBody,
    "chat": ChatBody,
    "generate": GenerateBody,
}


ERROR_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError",
               413: "BadRequestError", 503: "ServiceUnavailableError"}  # fmt: skip


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "InternalServerError")
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


def usage(flavor: str, request: SimRequest) -> dict[str, Any]:
    prompt, completion = request.prompt_tokens, request.generated
    counts = {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion}
    if flavor == "llamacpp":  # its order: completion_tokens first
        details = {"cached_tokens": request.cached_tokens}
        return {"completion_tokens": completion, **counts, "prompt_tokens_details": details}
    body: dict[str, Any] = {**counts, "prompt_tokens_details": None}
    return body | {"reasoning_tokens": 0} if flavor == "sglang" else body


def timings(request: SimRequest) -> dict[str, Any]:
    """llama.cpp's per-request `timings` object (first token free: per-token figures use n - 1)."""
    prompt_n = max(1, request.computed_prompt_tokens)
    prompt_ms = request.prefill_s * 1000.0
    predicted_s = (request.finished_at or request.last_token_at or 0.0) - (request.first_token_at or 0.0)
    predicted_ms = predicted_s * 1000.0
    steps = max(1, request.generated - 1)
    body: dict[str, Any] = {
        "cache_n": request.cached_tokens,
        "prompt_n": prompt_n,
        "prompt_ms": round(prompt_ms, 3),
        "prompt_per_token_ms": prompt_ms / prompt_n,
        "prompt_per_second": prompt_n / prompt_ms * 1000.0 if prompt_ms > 0 else 0.0,
        "predicted_n": request.generated,
        "predicted_ms": round(predicted_ms, 3),
        "predicted_per_token_ms": predicted_ms / steps,
        "predicted_per_second": steps / predicted_ms * 1000.0 if predicted_ms > 0 else 0.0,
    }
    if request.drafted:
        body["draft_n"] = request.drafted
        body["draft_n_accepted"] = request.accepted
    return body


class ChunkMaker:
    """Builds the JSON objects of one response, in the flavour's field order and shape."""

    def __init__(self, flavor: str, kind: str, model: str, request: SimRequest) -> None:
        self.flavor = flavor
        self.kind = kind
        self.model = model
        self.request = request
        if flavor == "llamacpp":
            self.id = "chatcmpl-" + "".join(secrets.choice(_ALNUM) for _ in range(32))
        else:
            self.id = ("chatcmpl-" if kind == "chat" else "cmpl-") + secrets.token_hex(16)
        self.created = int(time.time())

    def _envelope(self, choices: list[dict[str, Any]], chunk: bool) -> dict[str, Any]:
        obj = "text_completion" if self.kind != "chat" else f"chat.completion{'.chunk' if chunk else ''}"
        body = {"id": self.id, "object": obj, "created": self.created, "model": self.model}
        body["choices"] = choices
        if self.flavor == "llamacpp":  # its own order, and a build fingerprint
            order = ("choices", "created", "id", "model")
            return {key: body[key] for key in order} | {"system_fingerprint": "b0-unknown", "object": obj}
        return body

    def _shaped(self, key: str, value: Any, finish: str | None) -> dict[str, Any]:
        """A choice in the flavour's field order (llama.cpp's chat choices have no logprobs)."""
        if self.flavor != "llamacpp":
            return {"index": 0, key: value, "logprobs": None, "finish_reason": finish}
        if key == "text":
            return {"text": value, "index": 0, "logprobs": None, "finish_reason": finish}
        return {"finish_reason": finish, "index": 0, key: value}

    def _choice(self, text: str | None, finish: str | None, *, role: bool = False) -> dict[str, Any]:
        if self.kind != "chat":
            choice = self._shaped("text", text or "", finish)
        else:
            delta: dict[str, Any] = {}
            if role:
                delta["role"] = "assistant"
                delta["content"] = None if self.flavor == "llamacpp" else ""
            elif text is not None:
                delta["content"] = text
            if self.flavor == "sglang":
                delta = {"reasoning_content": None, **delta}
            choice = self._shaped("delta", delta, finish)
        stop_reason = self.request.stop_reason if finish == "stop" else None
        if self.flavor == "sglang":
            choice["matched_stop"] = stop_reason
        elif self.flavor == "vllm" and (finish is not None or self.kind != "chat"):
            choice["stop_reason"] = stop_reason
        return choice

    def role_chunk(self) -> dict[str, Any]:
        return self._envelope([self._choice(None, None, role=True)], chunk=True)

    def text_chunk(self, text: str, finish: str | None = None) -> dict[str, Any]:
        return self._envelope([self._choice(text, finish)], chunk=True)

    def finish_chunk(self, finish: str, include_timings: bool) -> dict[str, Any]:
        """llama.cpp's separate last chunk (empty delta / empty text)."""
        body = self._envelope([self._choice(None if self.kind == "chat" else "", finish)], chunk=True)
        if include_timings:
            body["timings"] = timings(self.request)
        return body

    def usage_chunk(self) -> dict[str, Any]:
        body = self._envelope([], chunk=True)
        body["usage"] = usage(self.flavor, self.request)
        if self.flavor == "llamacpp":
            body["timings"] = timings(self.request)
        return body

    def full_response(self) -> dict[str, Any]:
        request = self.request
        text = request.text(0, request.generated)
        finish = request.finish_reason or "abort"
        if self.kind == "chat":
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if self.flavor != "llamacpp":
                message.update(reasoning_content=None, tool_calls=[])
            choice = self._shaped("message", message, finish)
        else:
            choice = self._shaped("text", text, finish)
        if self.flavor == "vllm":
            choice["stop_reason"] = request.stop_reason
        elif self.flavor == "sglang":
            choice["matched_stop"] = request.stop_reason
        body = self._envelope([choice], chunk=False)
        body["usage"] = usage(self.flavor, request)
        if self.flavor == "llamacpp":
            body["timings"] = timings(request)
        return body
