"""Typed events parsed from server log lines. `time` is the line's own wall time; llama.cpp's time since
start goes to `uptime`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

ErrorCategory = Literal["oom", "engine_dead", "spec_config", "traceback", "other"]
# What a spec_decode line's counts cover: the log interval (vLLM, SGLang), one finished request (llama.cpp
# `draft acceptance`), or the server's lifetime (vLLM V0, llama.cpp `statistics`).
SpecScope = Literal["interval", "request", "lifetime"]


class StatsEvent(BaseModel):
    kind: Literal["stats"] = "stats"
    time: str | None = None
    backend: str | None = None
    prompt_tokens_per_s: float | None = None
    generation_tokens_per_s: float | None = None
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = Field(None, description="0..1")
    prefix_cache_hit_rate: float | None = Field(None, description="0..1")
    engine: str | None = Field(None, description="vLLM `Engine 002` -> '2'; SGLang rank prefix 'DP1 TP0'")
    phase: Literal["prefill", "decode"] | None = Field(None, description="SGLang batch kind")
    new_tokens: int | None = Field(None, description="SGLang prefill `#new-token` (computed)")
    cached_tokens: int | None = Field(None, description="SGLang prefill `#cached-token` (prefix hits)")
    extra: dict[str, bool | int | float | str] | None = Field(
        None, description="every other field as printed (key as in the log, percentages as 0..1)"
    )
    line: str = ""


class SpecDecodeEvent(BaseModel):
    kind: Literal["spec_decode"] = "spec_decode"
    time: str | None = None
    uptime: str | None = Field(None, description="llama.cpp: time since start as printed, not a wall time")
    backend: str | None = None
    mean_acceptance_length: float | None = None
    acceptance_rate: float | None = Field(None, description="0..1")
    per_position_acceptance: list[float] | None = None
    accepted_tokens: int | None = None
    drafted_tokens: int | None = None
    accepted_tokens_per_s: float | None = None
    drafted_tokens_per_s: float | None = None
    num_drafts: int | None = Field(None, description="verify steps, where the line prints them")
    scope: SpecScope | None = None
    engine: str | None = None
    line: str = ""


class ErrorEvent(BaseModel):
    kind: Literal["error"] = "error"
    time: str | None = None
    uptime: str | None = Field(None, description="llama.cpp: time since start as printed, not a wall time")
    backend: str | None = None
    category: ErrorCategory = "other"
    message: str = ""
    line: str = ""


LogEvent = Annotated[StatsEvent | SpecDecodeEvent | ErrorEvent, Field(discriminator="kind")]
