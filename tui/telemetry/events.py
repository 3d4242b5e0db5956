"""Typed events parsed from server log lines.

`kind` is one of "stats", "spec_decode", "error". `time` is the line's own
timestamp as an ISO-8601 string when the line carries a full date, else the
time text as printed (vLLM prints no year, llama.cpp prints time since start),
else None. Field names follow `tui.telemetry.figures` where they apply.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

ErrorCategory = Literal["oom", "engine_dead", "spec_config", "traceback", "other"]


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
    line: str = ""


class SpecDecodeEvent(BaseModel):
    kind: Literal["spec_decode"] = "spec_decode"
    time: str | None = None
    backend: str | None = None
    mean_acceptance_length: float | None = None
    acceptance_rate: float | None = Field(None, description="0..1")
    per_position_acceptance: list[float] | None = None
    accepted_tokens: int | None = None
    drafted_tokens: int | None = None
    accepted_tokens_per_s: float | None = None
    drafted_tokens_per_s: float | None = None
    line: str = ""


class ErrorEvent(BaseModel):
    kind: Literal["error"] = "error"
    time: str | None = None
    backend: str | None = None
    category: ErrorCategory = "other"
    message: str = ""
    line: str = ""


LogEvent = Annotated[StatsEvent | SpecDecodeEvent | ErrorEvent, Field(discriminator="kind")]
