"""Fault injection settings: what can go wrong on purpose, for tests and demos."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

GARBAGE_METRICS = (
    "<html><body><h1>502 Bad Gateway</h1></body></html>\n"
    'vllm:generation_tokens_total{engine="0" 12x\n'
    "# TYPE broken\x00\n"
)


class FaultSettings(BaseModel):
    """Every fault is off by default. Rates are probabilities per request."""

    model_config = ConfigDict(extra="forbid")

    error_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # requests answered with HTTP 500
    slow_first_token_s: float = Field(default=0.0, ge=0.0)  # extra delay before a request is scheduled
    disconnect_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # streams cut mid-way
    stall_every_s: float = Field(default=0.0, ge=0.0)  # the engine freezes this often ...
    stall_s: float = Field(default=0.0, ge=0.0)  # ... for this long (no tokens, no log lines)
    garbage_metrics: bool = False  # /metrics answers with unparseable text
    counter_reset_every_s: float = Field(default=0.0, ge=0.0)  # counters drop to 0 this often
    lossy_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # an accepted draft token is wrong (lossy)

    def merged(self, changes: dict[str, object]) -> FaultSettings:
        """A copy with `changes` applied (validated; unknown names are rejected)."""
        return FaultSettings.model_validate({**self.model_dump(), **changes})
