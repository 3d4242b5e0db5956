"""The burst engine: A/B (or one-arm) bursts, same prompts in the same order, alternating arms by round."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import accumulate
from typing import Any, Literal

import httpx
from pydantic import ConfigDict, Field

from tui.auth import ApiKeyError, api_key_from_env, bearer_headers
from tui.bench.client_check import LagMonitor, check_requests
from tui.bench.prompts import Prompt, PromptSet
from tui.bench.request import NATIVE_FIELDS, RequestSpec, RetryBudget, endpoint_url, run_request, server_root
from tui.bench.results import (
    ArmResult,
    Arrival,
    BurstResult,
    BurstSettings,
    BurstSettingsRecord,
    RequestResult,
    Schedule,
    ServerAcceptance,
)
from tui.bench.server_figures import counter_deltas
from tui.bench.stats import percentile, pooled_rate
from tui.format import fmt_setting
from tui.telemetry.scraper import Scrape, scrape_metrics
from tui.telemetry.window import figures_between

log = logging.getLogger(__name__)

FLUSH_PATHS = ("/reset_prefix_cache", "/flush_cache")  # vLLM (dev mode), SGLang
MODELS_TIMEOUT_S = 10.0
PROBE_CONNECT_TIMEOUT_S = 5.0
SCRAPE_TIMEOUT_S = 5.0
PROGRESS_INTERVAL_S = 0.1
Phase = Literal["warmup", "scrape", "running", "done"]


def arrival_offsets(count: int, rate: float, arrival: Arrival, rng: random.Random) -> list[float]:
    """Send offsets in seconds from the start for `count` requests at `rate` per second."""
    gaps = [rng.expovariate(rate) if arrival == "poisson" else 1.0 / rate for _ in range(count)]
    return list(accumulate(gaps, initial=0.0))[:count]


class BurstConfigError(Exception):
    """A burst that cannot start (missing key variable, too small connection pool, ...)."""


class ArmUnreachable(BurstConfigError):
    """An arm's server does not accept connections: checked before anything is sent or kept."""


@dataclass
class ArmTarget:
    name: str
    base_url: str
    metrics_url: str | None = None  # None: base URL (without /v1) + /metrics
    model: str | None = None  # None: the first model from GET /v1/models
    api_key_env: str | None = None
    scrape_metrics: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)  # this arm's own request fields

    def resolved_metrics_url(self) -> str:
        return self.metrics_url or server_root(self.base_url) + "/metrics"


class BurstConfig(BurstSettings):
    """One burst as the engine runs it (--until-significant: rounds until `check_round` names why to stop)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    a: ArmTarget
    prompt_set: PromptSet
    b: ArmTarget | None = None
    schedule: Schedule | None = "alternate"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = 120.0
    max_retries: int = 2
    rng_seed: int = 0  # arrivals and backoff jitter
    until_significant: bool = False
    max_rounds: int = 10
    check_round: Callable[[BurstResult], str | None] | None = None

    def arms(self) -> list[tuple[str, ArmTarget]]:
        return [("a", self.a)] + ([("b", self.b)] if self.b else [])

    def record(self, rounds_run: int, stop_reason: str | None) -> BurstSettingsRecord:
        """The settings as the result keeps them (--until-significant: the rounds that ran)."""
        settings = self.model_dump(include=set(BurstSettings.model_fields))
        if self.until_significant:
            settings |= {"requests": self.requests * rounds_run, "rounds": rounds_run}
        return BurstSettingsRecord(
            **settings | {"schedule": (self.schedule or "alternate") if self.b is not None else None},
            prompt_set=self.prompt_set.name,
            prompt_set_digest=self.prompt_set.digest,
            stop_reason=stop_reason,
        )


@dataclass
class ArmProgress:
    label: str
    name: str
    done: int = 0
    errors: int = 0
    retries: int = 0
    total: int = 0
    ttft_p50_s: float | None = None
    decode_tokens_per_s_pooled: float | None = None  # Σ(tokens - 1) / Σ decode time so far
    output_tokens: int = 0


@dataclass
class BurstProgress:
    phase: Phase
    done: int
    total: int
    elapsed_s: float
    arms: list[ArmProgress]

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


ProgressCallback = Callable[[BurstProgress], None]


def _api_key(target: ArmTarget) -> str | None:
    if not target.api_key_env:
        return None
    try:
        value = api_key_from_env(target.api_key_env)
    except ApiKeyError as error:
        raise BurstConfigError(f"arm {target.name}: {error}") from None
    if not value:
        raise BurstConfigError(
            f"arm {target.name}: environment variable {target.api_key_env} (the API key) is not set"
        )
    return value


def _pool_limit(client: httpx.AsyncClient) -> int | None:
    transport = getattr(client, "_transport", None)
    sharded = getattr(transport, "max_connections", None)  # tui.bench.transport.ShardedTransport
    if isinstance(sharded, int):
        return sharded
    pool = getattr(transport, "_pool", None)
    limit = getattr(pool, "_max_connections", None)
    return limit if isinstance(limit, int) else None


def _unreachable_reason(error: httpx.HTTPError) -> str:
    if isinstance(error, httpx.ConnectTimeout):
        return f"no connection within {fmt_setting(PROBE_CONNECT_TIMEOUT_S)} s"
    cause: BaseException | None = error
    for _ in range(10):  # httpx -> httpcore -> OSError -> the socket error
        if cause is None:
            break
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve the host name ({cause.strerror or cause})"
        cause = cause.__cause__ or cause.__context__
    return str(error) or type(error).__name__


async def probe_arm(
    client: httpx.AsyncClient, label: str, target: ArmTarget, headers: dict[str, str]
) -> str | None:
    """GET /v1/models: ArmUnreachable when nothing accepts the connection, else the first model id or None."""
    url = server_root(target.base_url) + "/v1/models"
    timeout = httpx.Timeout(MODELS_TIMEOUT_S, connect=PROBE_CONNECT_TIMEOUT_S)
    try:
        response = await client.get(url, headers=headers, timeout=timeout, follow_redirects=False)
        data = response.json() if response.status_code == 200 else None
    except (httpx.ConnectError, httpx.ConnectTimeout) as error:
        named = f" ({target.name})" if target.name.lower() != label.lower() else ""
        raise ArmUnreachable(
            f"arm {label.upper()}{named} {target.base_url} is not reachable: {_unreachable_reason(error)}"
        ) from error
    except (httpx.HTTPError, ValueError):
        return None  # it answered: what the requests get is theirs to report
    models = data.get("data") if isinstance(data, dict) else None
    if isinstance(models, list) and models and isinstance(models[0], dict):
        model_id = models[0].get("id")
        return str(model_id) if model_id else None
    return None


def build_body(
    config: BurstConfig, prompt: Prompt, model: str | None, arm_extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {**config.extra_body, **(arm_extra or {})}
    if config.api == "sglang":  # SGLang's native /generate
        params: dict[str, Any] = {**dict(body.pop("sampling_params", None) or {})}
        params.update(max_new_tokens=config.max_tokens, temperature=config.temperature)
        if config.seed is not None:
            params["sampling_seed"] = config.seed
        return {**body, "text": prompt.completion_text(), "sampling_params": params, **NATIVE_FIELDS}
    if model:
        body["model"] = model
    if config.api == "chat":
        body["messages"] = prompt.chat_messages()
    else:
        body["prompt"] = prompt.completion_text()
    body |= {"max_tokens": config.max_tokens, "temperature": config.temperature}
    if config.seed is not None:
        body["seed"] = config.seed
    return body | {
        "stream": True,
        "stream_options": {**dict(body.get("stream_options") or {}), "include_usage": True},
    }


async def _scrape(client: httpx.AsyncClient, target: ArmTarget, headers: dict[str, str]) -> Scrape | None:
    if not target.scrape_metrics:
        return None
    url = target.resolved_metrics_url()
    scrape = await scrape_metrics(client, url, timeout_s=SCRAPE_TIMEOUT_S, headers=headers)
    if not scrape.up:  # once more: a keep-alive connection the server just dropped fails the first try
        scrape = await scrape_metrics(client, url, timeout_s=SCRAPE_TIMEOUT_S, headers=headers)
    return scrape


def _acceptance(target: ArmTarget, first: Scrape | None, last: Scrape | None) -> ServerAcceptance:
    """The arm's acceptance over its window, and the counters' deltas to reconcile requests with."""
    if not target.scrape_metrics:
        return ServerAcceptance(note="metrics scraping off")
    if first is None or last is None or not (first.up and last.up):
        error = (last.error if last else None) or (first.error if first else None)
        reason = f": {error}" if error else ""
        return ServerAcceptance(note=f"no /metrics at {target.resolved_metrics_url()}{reason}")
    figures = figures_between(first, last)
    drafting = figures.acceptance_rate is not None or figures.mean_acceptance_length is not None
    return ServerAcceptance(
        acceptance_rate=figures.acceptance_rate,
        mean_acceptance_length=figures.mean_acceptance_length,
        note=None if drafting else "the server reports no speculative decoding",
        per_position_acceptance=figures.per_position_acceptance,
        **counter_deltas(first.samples, last.samples, last.backend or first.backend),
    )


class _Run:
    def __init__(
        self, config: BurstConfig, client: httpx.AsyncClient, on_progress: ProgressCallback | None
    ) -> None:
        self.config = config
        self.client = client
        self.on_progress = on_progress
        self.rng = random.Random(config.rng_seed)
        self.t0 = time.perf_counter()
        self.started_at = datetime.now(UTC)
        self.burst_id = f"{random.getrandbits(32):08x}"
        self.keys: dict[str, str | None] = {}
        self.headers: dict[str, dict[str, str]] = {}
        self.models: dict[str, str | None] = {}
        labels = [label for label, _ in config.arms()]
        self.results: dict[str, list[RequestResult]] = {label: [] for label in labels}
        self.active_s = dict.fromkeys(labels, 0.0)
        # Per arm: (first send, last done) of each round, from the start (alternate: no other arm in them).
        self.phases: dict[str, list[tuple[float, float]]] = {label: [] for label in labels}
        # Per arm: a storm on one server must not leave the other arm without retries.
        retries = config.requests + config.warmup
        self.budgets = {label: RetryBudget.for_requests(retries, config.max_retries) for label in labels}
        self.arm_notes: dict[str, list[str]] = {label: [] for label in labels}
        self.phase: Phase = "warmup"
        self.last_progress = 0.0
        self.progress = {
            label: ArmProgress(label=label, name=target.name, total=config.requests)
            for label, target in config.arms()
        }
        self.monitor = LagMonitor(self.t0)
        self.rounds_run = 0
        self.stop_reason: str | None = None

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def spec(
        self, label: str, target: ArmTarget, index: int, round_number: int, tag: str = ""
    ) -> RequestSpec:
        """`tag` marks the request id of a priming request ("p"); round -1, a warm-up, is "w"."""
        prompts = self.config.prompt_set.prompts
        if round_number < 0:  # warm-up: not a measured prompt, so its prefix is not cached for them
            prompt = Prompt(f"warmup-{index}", (("user", f"Warm-up {index}: say hello in one sentence."),))
            tag = "w"
        else:
            prompt = prompts[index % len(prompts)]
        return RequestSpec(
            url=endpoint_url(target.base_url, self.config.api),
            body=build_body(self.config, prompt, self.models[label], target.extra_body),
            # Unique per request, so server logs (vLLM uses X-Request-Id) can be matched to rows.
            headers={**self.headers[label], "X-Request-Id": f"spectop-{self.burst_id}-{tag}{label}{index}"},
            arm=label,
            index=index,
            round=round_number,
            prompt_id=prompt.id,
            category=prompt.category,
            prompt_snippet=prompt.messages[-1][1][:80] if prompt.messages else "",
        )

    async def request(self, spec: RequestSpec, scheduled: float, *, retries: bool = True) -> RequestResult:
        budget = self.budgets[spec.arm] if retries else RetryBudget(0)
        max_retries = self.config.max_retries if retries else 0
        return await run_request(
            self.client, spec, t0=self.t0, scheduled_s=scheduled, timeout_s=self.config.timeout_s,
            max_retries=max_retries, budget=budget, rng=self.rng, secret=self.keys[spec.arm],
        )  # fmt: skip

    async def send(self, label: str, target: ArmTarget, index: int, round_number: int, scheduled: float):
        spec = self.spec(label, target, index, round_number)
        try:
            return await self.request(spec, scheduled)
        except Exception as error:  # a bug must not take the whole burst down
            log.exception("burst request %s #%d failed", label, index)
            return RequestResult(
                arm=label,
                index=index,
                round=round_number,
                prompt_id=spec.prompt_id,
                scheduled_s=scheduled,
                sent_s=scheduled,
                error_kind="broken_stream",
                error=f"internal error: {type(error).__name__}: {error}",
            )

    def enter(self, phase: Phase) -> None:
        self.phase = phase
        self.report(force=True)

    def report(self, force: bool = False) -> None:
        now = time.perf_counter()
        if self.on_progress is None or (not force and now - self.last_progress < PROGRESS_INTERVAL_S):
            return
        self.last_progress = now
        arms = list(self.progress.values())
        for arm in arms:
            results = self.results[arm.label]
            ttfts = sorted(r.ttft_s for r in results if r.ttft_s is not None)
            samples = [sample for r in results if (sample := r.decode_sample())]
            arm.ttft_p50_s = percentile(ttfts, 50)
            arm.decode_tokens_per_s_pooled = pooled_rate(samples)
        done = sum(arm.done for arm in arms)
        total = sum(arm.total for arm in arms)
        self.on_progress(BurstProgress(self.phase, done, total, self.now(), arms))

    def record(self, result: RequestResult) -> None:
        self.results[result.arm].append(result)
        arm = self.progress[result.arm]
        arm.done += 1
        arm.errors += 0 if result.ok else 1
        arm.retries += result.attempts - 1
        arm.output_tokens += result.output_tokens or 0
        self.report()

    async def prepare(self) -> None:
        for label, target in self.config.arms():
            self.keys[label] = _api_key(target)
            self.headers[label] = bearer_headers(self.keys[label])
        limit = _pool_limit(self.client)
        needed = self.config.concurrency * len(self.config.arms())
        if limit is not None and limit < needed:
            raise BurstConfigError(
                f"concurrency {needed} in total is above the HTTP client's connection limit {limit}: "
                "requests would queue inside the client and show up as server latency"
            )
        # Every arm answers before anything is sent: a dead URL fails fast, with no burst to keep.
        arms = self.config.arms()
        probes = [probe_arm(self.client, label, target, self.headers[label]) for label, target in arms]
        served = await asyncio.gather(*probes, return_exceptions=True)
        if unreachable := [str(error) for error in served if isinstance(error, ArmUnreachable)]:
            raise ArmUnreachable("; ".join(unreachable))
        for (label, target), model in zip(arms, served, strict=True):
            if isinstance(model, BaseException):
                raise model
            self.models[label] = target.model if target.model is not None else model

    async def warm_up(self) -> None:
        semaphores = {label: asyncio.Semaphore(self.config.concurrency) for label, _ in self.config.arms()}

        async def one(label: str, target: ArmTarget, index: int) -> None:
            async with semaphores[label]:
                await self.send(label, target, index, -1, self.now())

        async with asyncio.TaskGroup() as group:
            for index in range(self.config.warmup):
                for label, target in self.config.arms():
                    group.create_task(one(label, target, index))

    async def run_round(self, round_number: int, indices: list[int], offsets: list[float]) -> None:
        arms = self.config.arms()[:: -1 if round_number % 2 == 1 else 1]  # who goes first alternates
        base_offset = offsets[indices[0]] if offsets else 0.0
        first_send: dict[str, float] = {}
        last_done: dict[str, float] = {}

        async def request_task(
            label: str, target: ArmTarget, index: int, scheduled: float, slot: asyncio.Semaphore
        ) -> None:
            try:
                first_send.setdefault(label, self.now())
                result = await self.send(label, target, index, round_number, scheduled)
                last_done[label] = self.now()
                self.record(result)
            finally:
                slot.release()

        async def dispatcher(label: str, target: ArmTarget) -> None:
            slot = asyncio.Semaphore(self.config.concurrency)
            start = self.now()  # alternate: this arm's own round starts now
            async with asyncio.TaskGroup() as group:
                for index in indices:
                    if self.config.rate is not None:
                        scheduled = start + offsets[index] - base_offset
                        delay = scheduled - self.now()
                        if delay > 0:
                            await asyncio.sleep(delay)
                        await slot.acquire()  # waiting here is client-side queueing: it shows as send lag
                    else:
                        await slot.acquire()
                        scheduled = self.now()
                    group.create_task(request_task(label, target, index, scheduled, slot))
                    await asyncio.sleep(0)  # let the other arm's dispatcher send next: A, B, A, B

        await self._by_schedule(arms, dispatcher)  # alternate: one arm's round, then the other's
        for label, _ in arms:
            if label in first_send and label in last_done:
                self.active_s[label] += last_done[label] - first_send[label]
                self.phases[label].append((first_send[label], last_done[label]))

    async def _by_schedule(
        self, arms: list[tuple[str, ArmTarget]], work: Callable[[str, ArmTarget], Coroutine[Any, Any, None]]
    ) -> None:
        """`work` for each arm: side by side (parallel schedule), else one arm after the other."""
        if self.config.schedule != "parallel":
            for label, target in arms:
                await work(label, target)
            return
        async with asyncio.TaskGroup() as group:
            for label, target in arms:
                group.create_task(work(label, target))

    async def flush_caches(self) -> None:
        """POST the servers' cache-flush endpoint (vLLM dev mode, SGLang); say what happened."""
        for label, target in self.config.arms():
            base = server_root(target.base_url)
            said = "no cache-flush endpoint answered (vLLM needs VLLM_SERVER_DEV_MODE=1)"
            for path in FLUSH_PATHS:
                try:
                    response = await self.client.post(
                        base + path, headers=self.headers[label], timeout=SCRAPE_TIMEOUT_S
                    )
                except httpx.HTTPError as error:
                    said = f"cache flush failed: {type(error).__name__}"
                    break
                if response.status_code < 300:
                    said = f"prefix cache flushed (POST {path})"
                    break
            self.arm_notes[label].append(said)

    async def prime_caches(self) -> None:
        """Each measured prompt once per arm (1 token, left out), so both prefix caches hold them."""
        prompts = self.config.prompt_set.prompts
        count = min(self.config.requests, len(prompts))

        async def arm(label: str, target: ArmTarget) -> None:
            gate = asyncio.Semaphore(self.config.concurrency)

            async def one(index: int) -> None:
                async with gate:
                    spec = self.spec(label, target, index, 0, tag="p")
                    if self.config.api == "sglang":
                        params = {**spec.body.get("sampling_params", {}), "max_new_tokens": 1}
                        spec.body = {**spec.body, "sampling_params": params}
                    else:
                        spec.body = {**spec.body, "max_tokens": 1}
                    await self.request(spec, self.now(), retries=False)

            async with asyncio.TaskGroup() as group:
                for index in range(count):
                    group.create_task(one(index))

        await self._by_schedule(self.config.arms(), arm)
        for label, _ in self.config.arms():
            self.arm_notes[label].append(f"prefix cache primed with the {count} prompts")

    async def scrape_all(self) -> list[Scrape | None]:
        arms = self.config.arms()
        scrapes = [_scrape(self.client, target, self.headers[label]) for label, target in arms]
        return list(await asyncio.gather(*scrapes))

    def round_indices(self) -> list[list[int]]:
        count, rounds = self.config.requests, min(self.config.rounds, self.config.requests)
        size, extra = divmod(count, rounds)  # the first `extra` rounds one request more
        return [
            list(range(n * size + min(n, extra), (n + 1) * size + min(n + 1, extra))) for n in range(rounds)
        ]

    async def run(self) -> BurstResult:
        if not self.config.prompt_set.prompts:
            raise BurstConfigError("the prompt set is empty")
        await self.prepare()
        self.report(force=True)
        await self.warm_up()
        if self.config.flush_cache:
            await self.flush_caches()
        if self.config.prime_cache:
            await self.prime_caches()
        self.enter("scrape")
        before = await self.scrape_all()
        self.enter("running")
        config = self.config
        offsets: list[float] = []
        if config.rate is not None:
            rounds = config.max_rounds if config.until_significant else 1
            offsets = arrival_offsets(config.requests * rounds, config.rate, config.arrival, self.rng)
        first_send = self.now()
        self.monitor.start()  # the client checks itself while it measures
        try:
            if config.until_significant:
                await self.rounds_until_significant(before, first_send, offsets)
            else:
                for round_number, indices in enumerate(self.round_indices()):
                    await self.run_round(round_number, indices, offsets)
        finally:
            await self.monitor.stop()
        last_done = self.now()
        self.enter("scrape")
        after = await self.scrape_all()
        result = self.build(before, after, first_send, last_done)
        self.enter("done")
        return result

    async def rounds_until_significant(
        self, before: list[Scrape | None], first_send: float, offsets: list[float]
    ) -> None:
        """Whole rounds of `requests` per arm, looked at after each from the second on."""
        config, size = self.config, self.config.requests
        for number in range(config.max_rounds):
            await self.run_round(number, list(range(number * size, (number + 1) * size)), offsets)
            self.rounds_run = number + 1
            if number == 0 or config.check_round is None:
                continue
            await self.monitor.pause()  # the look is spectop's own work, with nothing in flight
            so_far = self.build(before, [None] * len(before), first_send, self.now())
            reason = await asyncio.to_thread(config.check_round, so_far)
            self.monitor.start()
            if reason is not None:
                self.stop_reason = reason
                return
        self.stop_reason = f"--max-rounds {config.max_rounds} reached: the interval still spans 1.0"

    def build(
        self, before: list[Scrape | None], after: list[Scrape | None], first_send: float, last_done: float
    ) -> BurstResult:
        config = self.config
        arm_results = []
        for (label, target), first, last in zip(config.arms(), before, after, strict=True):
            requests = sorted(self.results[label], key=lambda r: r.index)
            requests, check = check_requests(requests, self.monitor, closed_loop=config.rate is None)
            arm_results.append(
                ArmResult(
                    label=label,
                    name=target.name,
                    url=target.base_url,
                    model=self.models.get(label),
                    started_s=first_send,
                    finished_s=last_done,
                    active_s=self.active_s[label] or None,
                    phases_s=list(self.phases[label]) if config.schedule != "parallel" else None,
                    requests=requests,
                    server=_acceptance(target, first, last),
                    extra_body=dict(target.extra_body),
                    metrics_url=target.resolved_metrics_url() if target.scrape_metrics else None,
                    notes=self.arm_notes[label],
                    client_check=check,
                )
            )
        return BurstResult(
            started_at=self.started_at,
            clock_origin_s=self.t0,
            duration_s=self.now(),
            settings=config.record(self.rounds_run, self.stop_reason),
            arms=arm_results,
        )


async def run_burst(
    config: BurstConfig, client: httpx.AsyncClient, *, on_progress: ProgressCallback | None = None
) -> BurstResult:
    """Run one burst. Raises BurstConfigError before sending anything if the burst cannot start."""
    return await _Run(config, client, on_progress).run()
