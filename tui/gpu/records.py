"""What a burst keeps of an arm's GPUs (part of the burst file format: tui/bench/results.py)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

# An arm's rounds under the alternate schedule: (first send, last done) each, `time.time()` moments.
Rounds = Sequence[tuple[float, float]]


class ArmGpuRecord(BaseModel):
    """One arm's GPU figures over its measured time; None where they cannot be known (never 0)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    energy_j: float | None = Field(None, description="joules the arm's GPUs used over the arm's time")
    energy_per_token_j: float | None = Field(None, description="joules per output token")
    tokens_per_joule: float | None = None
    energy_method: str | None = Field(None, description="'counter' (energy counter) or 'power' (integrated)")
    energy_scope: str | None = Field(
        None, description="what the energy covers when not all of the arm's time (None: all of it)"
    )
    throttled: bool | None = Field(None, description="clocks throttled at some reading during the arm")
    throttle_note: str | None = None
    note: str | None = Field(None, description="why a figure is unknown")
    gpus: list[str] = Field(default_factory=list, description="labels of the arm's GPUs")
