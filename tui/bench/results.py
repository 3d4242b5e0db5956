"""Typed results of a burst: one request, one arm, the whole burst (also the on-disk history format)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, computed_field

from tui.bench.server_figures import ServerFigures
from tui.gpu.records import ArmGpuRecord

ErrorKind = Literal["connect", "timeout", "http_status", "broken_stream"]
ERROR_KINDS: tuple[ErrorKind, ...] = ("connect", "timeout", "http_status", "broken_stream")


class ClientCheck(BaseModel):
    """Was the measuring client keeping up? (`--json`'s `client_check`)."""

    ok: bool
    reason: str | None = Field(None, description="why not, in words")
    remedy: str | None = None
    loop_lag_p99_s: float | None = Field(None, description="how late the event loop's ticker woke, p99")
    loop_lag_max_s: float | None = None
    send_lag_p99_s: float | None = Field(None, description="first attempts, against their turn")
    cpu_share: float | None = Field(None, description="spectop's CPU time over the burst, of one core")
    ticks: int = 0
    coalesced: int = Field(0, description="streams whose chunks reached the client in one burst")
    coalesced_client: int = Field(0, description="... while the client was late")
    coalesced_server: int = Field(0, description="... while the client kept up: the server buffered")
    server_timed: int = Field(0, description="requests whose decode figures are the server's own timing")
    left_out: int = Field(0, description="coalesced requests left out of decode figures (no server timing)")


class RequestResult(BaseModel):
    """One measured request. Times are seconds; `*_s` offsets without `sent` are from the burst start."""

    arm: str
    index: int = Field(description="position in the arm's measured sequence (same prompt on A and B)")
    round: int = 0
    prompt_id: str
    scheduled_s: float = Field(description="when the load shape wanted it sent")
    sent_s: float = Field(description="when the attempt that produced this result was sent")
    ttft_s: float | None = Field(None, description="sent -> first chunk carrying content")
    e2e_s: float | None = Field(None, description="sent -> end of stream")
    chunk_times_s: list[float] = Field(default_factory=list, description="content chunks, from sent")
    chunk_chars: list[int] = Field(default_factory=list, description="characters in each content chunk")
    chunk_tokens: list[int] | None = Field(None, description="tokens per content chunk, when the server says")
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    usage_estimated: bool = Field(False, description="no usage from the server: tokens counted from chunks")
    finish_reason: str | None = None
    text: str = ""
    text_truncated: bool = False
    error_kind: ErrorKind | None = None
    error: str | None = None
    http_status: int | None = None
    attempts: int = 1
    category: str | None = Field(None, description="the prompt's category (built-in set or JSONL field)")
    prompt_snippet: str = Field("", description="the start of the prompt, to name outliers")
    server: ServerFigures | None = Field(None, description="what the server said about this request")
    # coalesced: its chunks came at once (the client fell behind, or the server buffered); decode_from: the
    # client's chunk times, the server's own timing (coalesced, or a late client), or none (left out)
    coalesced: Literal["client", "server"] | None = Field(None, description="chunks came at once: why")
    decode_from: Literal["client", "server", "none"] = Field("client", description="decode figures' source")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def send_lag_s(self) -> float:
        """Client-side delay between the scheduled and the actual send (queueing, retries)."""
        return max(0.0, self.sent_s - self.scheduled_s)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def decode_tokens_per_s(self) -> float | None:
        """(output tokens - 1) / decode seconds (`decode_sample`): the first token comes with the prefill."""
        sample = self.decode_sample()
        return sample[0] / sample[1] if sample else None

    def client_decode_sample(self) -> tuple[float, float] | None:
        """(output tokens - 1, e2e - TTFT) as the client saw the stream."""
        if not self.ok or self.output_tokens is None or self.output_tokens < 2:
            return None
        if self.ttft_s is None or self.e2e_s is None or self.e2e_s <= self.ttft_s:
            return None
        return (self.output_tokens - 1, self.e2e_s - self.ttft_s)

    def server_decode_sample(self) -> tuple[float, float] | None:
        """(output tokens - 1, their decode seconds by the server's own timing); None: it did not say."""
        if not self.ok or self.server is None or self.output_tokens is None or self.output_tokens < 2:
            return None
        rate = self.server.decode_rate(self.output_tokens)
        if not rate or rate <= 0:
            return None
        return (self.output_tokens - 1, (self.output_tokens - 1) / rate)

    def decode_sample(self) -> tuple[float, float] | None:
        """The parts of decode_tokens_per_s: the client's, or the server's own timing (`decode_from`)."""
        if self.decode_from == "none":
            return None
        if self.decode_from == "server":
            return self.server_decode_sample()
        return self.client_decode_sample()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tpot_s(self) -> float | None:
        """Per output token after the first (not per chunk, not per engine step)."""
        rate = self.decode_tokens_per_s
        return 1.0 / rate if rate else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def chunk_gap_s(self) -> float | None:
        """Mean time between content chunks (a chunk may carry several tokens)."""
        if not self.ok or len(self.chunk_times_s) < 2:
            return None
        return (self.chunk_times_s[-1] - self.chunk_times_s[0]) / (len(self.chunk_times_s) - 1)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens_per_chunk(self) -> float | None:
        if not self.ok or self.output_tokens is None or not self.chunk_times_s:
            return None
        return self.output_tokens / len(self.chunk_times_s)


class ServerAcceptance(BaseModel):
    """Acceptance on the server during an arm, from /metrics deltas (None when not exposed)."""

    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    note: str | None = Field(None, description="why the figures are missing, if they are")
    # Raw /metrics deltas over the arm's window, to reconcile with the per-request figures.
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    verify_steps: float | None = None
    per_position_acceptance: list[float] | None = Field(None, description="per draft position, same window")


class ArmResult(BaseModel):
    label: str = Field(description="'a' or 'b'")
    name: str = Field(description="endpoint name or URL as the user picked it")
    url: str
    model: str | None = None
    started_s: float | None = Field(None, description="first measured send, from the burst start")
    finished_s: float | None = Field(None, description="last measured request done, from the burst start")
    active_s: float | None = Field(None, description="time with requests in flight (all rounds)")
    phases_s: list[tuple[float, float]] | None = Field(None, description="alternate: each round's span")
    requests: list[RequestResult] = Field(default_factory=list)
    server: ServerAcceptance = Field(default_factory=ServerAcceptance)
    extra_body: dict[str, object] = Field(default_factory=dict, description="this arm's own request fields")
    metrics_url: str | None = None
    notes: list[str] = Field(default_factory=list, description="what happened to this arm (cache flush, ...)")
    gpu: ArmGpuRecord | None = Field(None, description="the arm's GPUs' energy and throttling, if watched")
    client_check: ClientCheck | None = Field(None, description="None: an older spectop")


Api = Literal["chat", "completions", "sglang"]
Arrival = Literal["poisson", "constant"]
Schedule = Literal["alternate", "parallel"]


class BurstSettings(BaseModel):
    """What a burst measures, as the engine runs it (`engine.BurstConfig`) and as its result keeps it."""

    api: Api = "chat"  # sglang: SGLang's native /generate
    requests: int = Field(32, ge=1, description="measured, per arm")
    concurrency: int = Field(1, ge=1, description="in flight per arm (the cap, with a rate)")
    rate: float | None = Field(None, gt=0, description="requests/s per arm: open loop (None: closed)")
    arrival: Arrival = "poisson"
    rounds: int = Field(3, ge=1, description="the arm that goes first alternates by round")
    warmup: int = Field(0, ge=0, description="per arm, left out of the results")
    max_tokens: int = Field(256, ge=1)
    temperature: float = 0.0
    seed: int | None = Field(None, description="sent to the server when set")
    schedule: Schedule | None = Field(None, description="None: alternate (kept: one arm)")
    schedule_reason: str | None = None
    slo: str | None = Field(None, description="--slo as given, e.g. ttft=500ms,tpot=40ms")
    percentiles: list[float] | None = None
    prime_cache: bool = Field(False, description="each prompt once per arm before measuring")
    flush_cache: bool = Field(False, description="each server asked to drop its prefix cache first")
    ci_level: float | None = Field(None, description="the verdict's interval level (None: 95%)")
    looks: int | None = Field(None, description="--until-significant: the looks the level is split over")


class BurstSettingsRecord(BurstSettings):
    """What was asked for, kept with the result (never the API key)."""

    prompt_set: str
    prompt_set_digest: str
    compared: Literal["before_after"] | None = Field(None, description="two one-arm bursts (--compare)")
    stop_reason: str | None = Field(None, description="--until-significant: why no more rounds ran")


Ratio = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class BurstVerdict(BaseModel):
    """B against A as the burst's verdict said when it was kept, for the history (no bootstrap again)."""

    text: str = Field(max_length=2000, description="the verdict line")
    decode_tokens_per_s_ratio: Ratio | None = Field(None, description="pooled decode tokens/s, B / A")
    ci95: tuple[Ratio, Ratio] | None = Field(None, description="its bootstrap 95% interval")


class BurstResult(BaseModel):
    format: Literal["spectop-burst/1"] = "spectop-burst/1"
    started_at: datetime
    clock_origin_s: float | None = Field(None, description="perf_counter() at the start")
    duration_s: float
    settings: BurstSettingsRecord
    arms: list[ArmResult]
    cancelled: bool = False
    verdict: BurstVerdict | None = Field(None, description="None: one arm, or kept by an older spectop")
