"""One burst session: a typed request, validated once, then run, compared, kept and exported."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from tui.bench.burst_options import OptionError, choose_schedule, parse_extra, parse_percentiles, parse_slo
from tui.bench.burst_store import BurstFileError, combine_bursts, load_burst, save_burst
from tui.bench.client_settings import ClientSettings, ClientSettingsError, load_client_settings
from tui.bench.context import sized_for_server
from tui.bench.engine import ArmTarget, BurstConfig, BurstProgress, ProgressCallback, run_burst
from tui.bench.prompts import DEFAULT_PROMPT_SET, PromptSetError
from tui.bench.report.export import export
from tui.bench.report.models import BurstSummary
from tui.bench.report.summary import burst_summary, comparison
from tui.bench.results import Api, Arrival, BurstResult, BurstSettings, Schedule
from tui.bench.transport import burst_client
from tui.gpu.records import ArmGpuRecord, Rounds
from tui.settings import EndpointSettings
from tui.validators import check_env_var_name, friendly_message, normalize_http_url, scheme_was_added

Side = Literal["a", "b"]
ExportKind = Literal["json", "csv", "markdown"]
_OUT_OF_RANGE = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
_NOT_A_NUMBER = frozenset({"int_parsing", "float_parsing", "int_from_float", "finite_number"})


class BurstRequestError(ValueError):
    """A burst that cannot be asked for: `field` names the request field, `message` says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def described(self, labels: Mapping[str, str]) -> str:
        return f"{labels.get(self.field, self.field)}: {self.message}"


class BurstCancelled(Exception):
    """The burst was cancelled: every request in flight was closed, nothing is kept."""

    def __init__(self) -> None:
        super().__init__("cancelled: every request in flight was closed")


class EndpointArm(BaseModel):
    """A live server; `model` / `api_key_env` None: the request's, else the client settings'."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["endpoint"] = "endpoint"
    name: str
    base_url: str
    metrics_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    scheme_added: bool = Field(False, description="set by validation: host:port was taken as http://")

    @classmethod
    def from_settings(cls, endpoint: EndpointSettings) -> EndpointArm:
        return cls(
            name=endpoint.name,
            base_url=endpoint.url,
            metrics_url=endpoint.resolved_metrics_url,
            model=endpoint.model,
            api_key_env=endpoint.api_key_env,
        )


class PastArm(BaseModel):
    """One arm (`a` or `b`) of a burst kept in the burst files."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["past"] = "past"
    path: Path
    arm: Side = "a"


Arm = Annotated[EndpointArm | PastArm, Field(discriminator="kind")]


def _sequential(request: BurstRequest, arms: int) -> dict[str, Any]:
    """--until-significant: a look per round from the second, at the Bonferroni-split level."""
    if not request.until_significant:
        return {}
    if arms < 2:
        raise BurstRequestError("until_significant", "needs two arms (A and B) to compare")
    looks = request.max_rounds - 1
    level = 1.0 - 0.05 / looks

    def check(result: BurstResult) -> str | None:
        found = comparison(result.arms[0], result.arms[1], settings=result.settings, level=level)
        interval = found.ci95
        if interval is not None and not interval[0] <= 1.0 <= interval[1]:
            return f"the interval excludes 1.0 after {result.settings.rounds} rounds"
        return None

    return {
        "until_significant": True, "max_rounds": request.max_rounds, "check_round": check,
        "ci_level": level, "looks": looks,
    }  # fmt: skip


class BurstRequest(BaseModel):
    """What a burst is asked to do, from the CLI's flags or the screen's form (text is converted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    a: Arm | None = None  # None: base_url of the client settings
    b: Arm | None = None  # None: a plain one-arm benchmark
    prompts: str = Field(DEFAULT_PROMPT_SET, min_length=1)  # a built-in set name or a JSONL file
    requests: int = Field(32, ge=1, le=100_000)  # measured, per arm
    concurrency: int = Field(1, ge=1, le=4096)  # in flight per arm (the cap, with a rate)
    rate: float | None = Field(None, gt=0, le=100_000)  # requests/s per arm: open loop
    arrival: Arrival = "poisson"
    rounds: int = Field(3, ge=1, le=1000)  # the arm that goes first alternates by round
    warmup: int = Field(1, ge=0, le=10_000)  # per arm, left out
    api: Api = "chat"
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1, le=1_000_000)  # None: client settings, else 512
    temperature: float | None = Field(None, ge=0, le=5)  # None: client settings, else 0
    seed: int | None = None
    timeout_s: float | None = Field(None, gt=0, le=3600)  # None: client settings, else 120
    client_settings: Path | None = None  # a client settings.json
    api_key_env: str | None = None  # None: the arm's, else the client settings'
    scrape_metrics: bool = True
    schedule: Schedule | None = None  # None: alternate (see choose_schedule)
    slo: str | None = None  # ttft=500ms,tpot=40ms,e2e=10s
    percentiles: str | None = None  # 50,90,99,99.9
    a_extra: dict[str, Any] | None = None  # request fields for A only (a JSON object as text is accepted)
    b_extra: dict[str, Any] | None = None
    prime_cache: bool = False
    flush_cache: bool = False
    until_significant: bool = False  # rounds of `requests` until the interval excludes 1.0
    max_rounds: int = Field(10, ge=2, le=1000)

    @field_validator("slo", "percentiles")
    @classmethod
    def _option(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or not value.strip():
            return None
        parse = parse_slo if info.field_name == "slo" else parse_percentiles
        try:
            parse(value)
        except OptionError as error:
            raise ValueError(str(error).removeprefix(f"--{info.field_name} ")) from None
        return value.strip()

    @field_validator("a_extra", "b_extra", mode="before")
    @classmethod
    def _extra(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        if not isinstance(value, str | dict):
            return value
        try:
            return parse_extra(value if isinstance(value, str) else json.dumps(value), "fields")
        except (OptionError, TypeError) as error:
            raise ValueError(str(error).removeprefix("fields: ")) from None

    @field_validator("a", "b")
    @classmethod
    def _arm_url(cls, arm: EndpointArm | PastArm | None) -> EndpointArm | PastArm | None:
        if not isinstance(arm, EndpointArm):
            return arm
        url = normalize_http_url(arm.base_url)
        metrics = normalize_http_url(arm.metrics_url) if arm.metrics_url else None
        added = arm.scheme_added or scheme_was_added(arm.base_url, url)
        return arm.model_copy(update={"base_url": url, "metrics_url": metrics, "scheme_added": added})

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        return None if value is None else check_env_var_name(value)

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> BurstRequest:
        """The request, or BurstRequestError naming the first field that cannot be used."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as error:
            first = error.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else "request"
            message = friendly_message(dict(first))
            if first["type"] in _OUT_OF_RANGE:
                message += f", got {first['input']}"
            elif first["type"] in _NOT_A_NUMBER:
                message += f", got {first['input']!r}"
            raise BurstRequestError(field, message) from None

    @property
    def notes(self) -> list[str]:
        """What the caller should say about the request as it was understood."""
        return [
            f"{side.upper()}: no scheme given, using {arm.base_url}"
            for side, arm in (("a", self.a), ("b", self.b))
            if isinstance(arm, EndpointArm) and arm.scheme_added
        ]


# The request's settings the engine takes as they are (the others come resolved).
RESOLVED = {"max_tokens", "temperature", "schedule", "percentiles"}
AS_ASKED = set(BurstRequest.model_fields) & set(BurstSettings.model_fields) - RESOLVED


@dataclass(frozen=True)
class BurstOutcome:
    """A finished burst (or comparison): what is shown, exported and kept."""

    result: BurstResult  # shown and exported: two bursts combined when an arm is a past burst
    summary: BurstSummary
    ran: BurstResult | None  # the burst that ran live (what `save` keeps); None: past bursts only
    notes: tuple[str, ...] = ()  # found while running, for the caller to say (besides `request.notes`)

    @property
    def failed(self) -> bool:
        return self.ran is not None and any(not r.ok for arm in self.ran.arms for r in arm.requests)

    def export(self, kind: ExportKind | str, path: Path, *, detail: bool = False) -> Path:
        return export(self.result, kind, path, detail=detail)


def _past(side: str, arm: PastArm) -> BurstResult:
    try:
        return load_burst(arm.path)
    except BurstFileError as error:
        raise BurstRequestError(side, str(error)) from None


def _combined(side: str, before: tuple[BurstResult, str], after: tuple[BurstResult, str]) -> BurstResult:
    try:
        return combine_bursts(before[0], after[0], before_arm=before[1], after_arm=after[1])
    except BurstFileError as error:
        raise BurstRequestError(side, str(error)) from None


def _outcome(result: BurstResult, ran: BurstResult | None) -> BurstOutcome:
    return BurstOutcome(result=result, summary=burst_summary(result, with_detail=False), ran=ran)


def compare(before: PastArm, after: PastArm) -> BurstOutcome:
    """Two kept bursts of the same prompt set, `before` as A (CPU work: from async code, in a thread)."""
    first, second = _past("a", before), _past("b", after)
    return _outcome(_combined("b", (first, before.arm), (second, after.arm)), None)


def open_burst(path: Path) -> BurstOutcome:
    """A kept burst as it ran (from async code, in a thread)."""
    return _outcome(_past("a", PastArm(path=path)), None)


class GpuWatch(Protocol):
    """The arms' GPUs read right before, during and right after the burst (tui/gpu/burst.py)."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def record(
        self, url: str, start: float, end: float, output_tokens: int, phases: Rounds | None = None
    ) -> ArmGpuRecord | None: ...


def with_gpu(result: BurstResult, watch: GpuWatch) -> BurstResult:
    """Each arm with its GPUs' energy and throttling over its measured time (and its own rounds)."""
    origin = result.started_at.timestamp()
    arms = []
    for arm in result.arms:
        tokens = sum(r.output_tokens or 0 for r in arm.requests if r.ok)
        record = None
        if arm.started_s is not None and arm.finished_s is not None:
            phases = [(origin + first, origin + last) for first, last in arm.phases_s or ()] or None
            record = watch.record(arm.url, origin + arm.started_s, origin + arm.finished_s, tokens, phases)
        arms.append(arm.model_copy(update={"gpu": record}))
    return result.model_copy(update={"arms": arms})


class BurstSession:
    """Runs one `BurstRequest` (`run`, then `save`); the outcome exports."""

    compare = staticmethod(compare)

    def __init__(
        self, request: BurstRequest, client: httpx.AsyncClient | None = None, gpu: GpuWatch | None = None
    ) -> None:
        self.request = request
        self.gpu = gpu  # the arms' GPUs: energy per token and throttling per arm (None: not watched)
        self.client = client  # None: a client of its own, sized for the burst (tui.bench.transport)
        self.settings = ClientSettings()
        self._notes: list[str] = []
        self.outcome: BurstOutcome | None = None

    async def _client_settings(self) -> ClientSettings:
        path = self.request.client_settings
        if path is None:
            return ClientSettings()
        try:
            settings = await asyncio.to_thread(load_client_settings, path)
        except ClientSettingsError as error:
            raise BurstRequestError("client_settings", str(error)) from None
        if not settings.stream:
            self._notes.append("stream=false in the client settings is ignored: TTFT needs streaming")
        return settings

    def _arm_a(self) -> EndpointArm | PastArm:
        if self.request.a is not None:
            return self.request.a
        if not self.settings.base_url:
            raise BurstRequestError(
                "a", "required: an endpoint or a past burst (or base_url in client settings)"
            )
        return EndpointArm(name="A", base_url=normalize_http_url(self.settings.base_url))

    def _target(self, arm: EndpointArm, side: Side) -> ArmTarget:
        request, settings = self.request, self.settings
        extra = request.a_extra if side == "a" else request.b_extra
        return ArmTarget(
            extra_body=dict(extra or {}),
            name=arm.name,
            base_url=arm.base_url,
            metrics_url=arm.metrics_url,
            model=arm.model or request.model or settings.model,
            api_key_env=arm.api_key_env or request.api_key_env or settings.api_key_env,
            scrape_metrics=request.scrape_metrics,
        )

    async def config(self, live: list[tuple[Side, EndpointArm]], past: BurstResult | None) -> BurstConfig:
        """The engine's config for the live arms (each with the side of the request it is)."""
        request, settings = self.request, self.settings
        spec = past.settings.prompt_set if past is not None else request.prompts
        try:  # SET@N sized by the live server's tokenizer (the first arm's: both get the same prompts)
            sized_by = live[0][1].base_url if past is None and live else None
            prompt_set = await sized_for_server(spec, sized_by, self.client)
        except PromptSetError as error:
            raise BurstRequestError("prompts", str(error)) from None
        if past is not None and prompt_set.digest != past.settings.prompt_set_digest:
            raise BurstRequestError(
                "prompts", f"the prompt set {spec} changed since that burst: not comparable"
            )
        targets = [self._target(arm, side) for side, arm in live]
        b_url = targets[1].base_url if len(targets) > 1 else None
        schedule, reason = choose_schedule(request.schedule, targets[0].base_url, b_url)
        return BurstConfig(
            **request.model_dump(include=AS_ASKED),
            schedule=schedule,
            schedule_reason=reason if b_url else None,
            percentiles=list(parse_percentiles(request.percentiles)) if request.percentiles else None,
            a=targets[0],
            b=targets[1] if len(targets) > 1 else None,
            prompt_set=prompt_set,
            max_tokens=request.max_tokens if request.max_tokens is not None else settings.max_tokens,
            temperature=request.temperature if request.temperature is not None else settings.temperature,
            extra_body=settings.extra_body,
            timeout_s=request.timeout_s if request.timeout_s is not None else settings.timeout,
            max_retries=settings.max_retries,
            **_sequential(request, len(targets)),
        )

    async def run(
        self, on_progress: ProgressCallback | None = None, cancel: asyncio.Event | None = None
    ) -> BurstOutcome:
        """Run the burst (BurstCancelled once `cancel` is set). Nothing is kept until `save`."""
        self.settings = await self._client_settings()
        arms: list[tuple[Side, EndpointArm | PastArm]] = [("a", self._arm_a())]
        if self.request.b is not None:
            arms.append(("b", self.request.b))
        past = [(side, arm) for side, arm in arms if isinstance(arm, PastArm)]
        live = [(side, arm) for side, arm in arms if isinstance(arm, EndpointArm)]
        if not live:
            outcome = await asyncio.to_thread(compare, past[0][1], past[1][1])
        else:
            kept: tuple[Side, BurstResult, str] | None = None
            if past:
                side, arm = past[0]
                kept = (side, await asyncio.to_thread(_past, side, arm), arm.arm)
            config = await self.config(live, kept[1] if kept else None)
            labels = {"a": "b"} if kept and kept[0] == "a" else {}  # a live B runs as the engine's arm a
            ran = result = await self._run(config, _relabelled(on_progress, labels), cancel)
            if kept is not None:
                pair = ((kept[1], kept[2]), (ran, "a"))  # before, after
                result = _combined(kept[0], *(pair if kept[0] == "a" else pair[::-1]))
            outcome = await asyncio.to_thread(_outcome, result, ran)  # the bootstrap: CPU
        self.outcome = dataclasses.replace(outcome, notes=tuple(self._notes))
        return self.outcome

    async def _run(
        self, config: BurstConfig, on_progress: ProgressCallback | None, cancel: asyncio.Event | None
    ) -> BurstResult:
        """The burst, with the GPU watch (when there is one) read before, during and after it."""
        async with contextlib.AsyncExitStack() as stack:
            if self.gpu is not None:
                await self.gpu.start()
                stack.push_async_callback(self.gpu.stop)
            client = self.client
            if client is None:
                connections = config.concurrency * len(config.arms()) + 8
                client = await stack.enter_async_context(
                    burst_client(connections, timeout_s=config.timeout_s)
                )
            burst = asyncio.ensure_future(run_burst(config, client, on_progress=on_progress))
            if cancel is not None:
                cancelled = asyncio.ensure_future(cancel.wait())
                try:
                    await asyncio.wait((burst, cancelled), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    cancelled.cancel()
                    if not burst.done():
                        burst.cancel()  # closes every request in flight
                        with contextlib.suppress(asyncio.CancelledError):
                            await burst
                if burst.cancelled():
                    raise BurstCancelled
            ran = await burst
        return ran if self.gpu is None else with_gpu(ran, self.gpu)

    def save(self) -> Path | None:
        """Keep the live burst in the burst files; None when nothing ran live."""
        if self.outcome is None or self.outcome.ran is None:
            return None
        ran = self.outcome.ran  # its verdict is the one shown unless a past burst was its other arm
        found = self.outcome.summary.comparison if self.outcome.result is ran else None
        return save_burst(ran, found=found)


def _relabelled(on_progress: ProgressCallback | None, labels: dict[str, str]) -> ProgressCallback | None:
    """Progress with the arms named as the caller shows them (a live B against a past A)."""
    if on_progress is None or not labels:
        return on_progress

    def show(progress: BurstProgress) -> None:
        arms = [dataclasses.replace(arm, label=labels.get(arm.label, arm.label)) for arm in progress.arms]
        on_progress(dataclasses.replace(progress, arms=arms))

    return show
