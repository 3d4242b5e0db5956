"""The typed burst summary: one arm's figures, the comparison of two, the whole burst."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, FieldSerializationInfo, field_serializer

from tui.bench import explain
from tui.bench.results import BurstSettingsRecord, ClientCheck, RequestResult
from tui.bench.stats import Summary
from tui.gpu.records import ArmGpuRecord


class DecodeRate(BaseModel):
    """Per-request decode rates: pooled and percentiles (a mean would let one coalesced stream swing it)."""

    model_config = ConfigDict(frozen=True)

    pooled: float | None = None
    p10: float | None = None
    p50: float | None = None
    p90: float | None = None


class ArmExplain(BaseModel):
    """What explains an arm's figures: the servers' per-request figures, SLOs, cache, /metrics."""

    model_config = ConfigDict(frozen=True)

    acceptance: explain.AcceptanceFigures
    categories: list[explain.CategoryRow]
    outliers: list[explain.Outlier]
    timing: explain.TimingFigures
    cache: explain.CacheFigures
    reconciliation: explain.Reconciliation | None = None
    goodput: explain.Goodput | None = None
    slo: str | None = None
    percentiles: dict[str, dict[str, float | None]] = {}  # "ttft_s" -> {"99.9": value}
    request_throughput: float | None = None  # successful requests/s of the arm's active time
    decode_tokens_per_s_pooled: float | None = None  # Σ(tokens - 1) / Σ decode time: the verdict's figure
    notes: list[str] = []


class ArmSummary(BaseModel):
    """One arm's figures; None where the burst could not know them (never 0)."""

    model_config = ConfigDict(frozen=True)

    name: str
    url: str
    model: str | None
    requests: int
    errors: int
    errors_by_kind: dict[str, int]
    # Why requests failed: each distinct reason once with its count, most frequent first.
    error_reasons: tuple[tuple[str, int], ...] = ()
    retries: int
    retried_requests: int
    ttft_s: Summary
    tpot_s: Summary
    chunk_gap_s: Summary
    e2e_s: Summary
    decode_tokens_per_s: DecodeRate
    output_tokens_per_s: float | None
    tokens_per_chunk: float | None
    send_lag_s: Summary
    usage_estimated: bool
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    acceptance_note: str | None
    explain: ArmExplain | None = None
    # The arm's GPUs (tui/gpu/burst.py), None when not watched or unknown (`gpu.note` says why).
    energy_j: float | None = None
    energy_per_token_j: float | None = None
    tokens_per_joule: float | None = None
    throttled: bool | None = None
    gpu: ArmGpuRecord | None = None
    client_check: ClientCheck | None = None  # was the measuring client keeping up (None: not checked)
    requests_detail: tuple[RequestResult, ...] | None = None  # every request (without text), for JSON

    @field_serializer("requests_detail")
    def _dump_detail(
        self, requests: tuple[RequestResult, ...] | None, info: FieldSerializationInfo
    ) -> list[dict[str, Any]] | None:
        if requests is None:
            return None
        return [
            r.model_dump(mode=info.mode, exclude={"text"}) | {"text_chars": len(r.text)} for r in requests
        ]


class Comparison(BaseModel):
    """B against A: the pooled decode-rate ratio with its bootstrap 95% CI, and the verdict line."""

    model_config = ConfigDict(frozen=True)

    decode_tokens_per_s_ratio: float | None
    ci95: tuple[float, float] | None  # rounds and requests resampled (requests only with one round)
    throughput_ratio: float | None
    ttft_p50_delta_s: float | None
    verdict: str
    ci95_within_burst: tuple[float, float] | None = None  # requests only: this burst's rounds as they ran
    round_ratios: list[float | None] = []
    warnings: list[str] = []  # what the verdict must be read with (cache state, rounds, schedule)
    arms_differ_by: str | None = None


class Divergence(BaseModel):
    index: int
    prompt_id: str
    char_position: int = Field(description="first character that differs (0-based)")
    token_position: int | None = Field(None, description="tokens before the chunk holding it")
    a_snippet: str
    b_snippet: str


class Equivalence(BaseModel):
    """Greedy equivalence: at temperature 0, did A and B produce the same text for each prompt?"""

    compared: int = 0
    identical: int = 0
    divergences: list[Divergence] = Field(default_factory=list)


class BurstSummary(BaseModel):
    """What the table, the verdict and the exports show of one burst (or of two compared)."""

    model_config = ConfigDict(frozen=True)

    a: ArmSummary
    b: ArmSummary | None
    comparison: Comparison | None
    equivalence: Equivalence | None  # greedy equivalence: A/B at temperature 0 only
    settings: BurstSettingsRecord
    started_at: datetime
    duration_s: float
    cancelled: bool

    @field_serializer("started_at")
    def _dump_started_at(self, value: datetime) -> str:
        return value.isoformat()

    @property
    def arms(self) -> list[tuple[str, ArmSummary]]:
        return [("a", self.a)] + ([("b", self.b)] if self.b else [])
