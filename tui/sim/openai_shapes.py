"""Request bodies and response chunks of the OpenAI-compatible API, per server flavour."""

from __future__ import annotations

import secrets
import string
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tui.sim.engine import SimRequest
from tui.sim.tokens import count_tokens

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
