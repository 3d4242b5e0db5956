"""The simulated engine: one asyncio loop that admits waiting requests, prefills newcomers and runs a decode
step (k drafts, accepted + 1 emitted) per iteration, sleeping the modelled step time; observers see it all."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import random
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from tui.sim.behaviour import AdaptiveSteps, Behaviour, draw_accepted
from tui.sim.config import SimConfig
from tui.sim.faults import FaultSettings
from tui.sim.tokens import generate, tokenize, wrong_token

MAX_PROMPT_TOKENS = 262_144
MAX_OUTPUT_TOKENS = 32_768


def block_hashes(tokens: list[str], block_size: int) -> list[bytes]:
    """Chained hashes of the full blocks of a token list (a block's hash covers everything before it)."""
    hashes: list[bytes] = []
    previous = b""
    for start in range(0, len(tokens) - block_size + 1, block_size):
        block = "\x1f".join(tokens[start : start + block_size]).encode("utf-8", "replace")
        previous = hashlib.blake2b(previous + block, digest_size=12).digest()
        hashes.append(previous)
    return hashes


class PrefixCache:
    """vLLM's automatic prefix caching: a least-recently-used set of blocks (by chained hash), bounded by
    `capacity_blocks`. Off, requests have no hashes."""

    def __init__(self, capacity_blocks: int, block_size: int) -> None:
        self.capacity_blocks = max(1, capacity_blocks)
        self.block_size = block_size
        self._blocks: OrderedDict[bytes, None] = OrderedDict()

    def lookup(self, hashes: list[bytes], prompt_tokens: int) -> int:
        """Cached prompt tokens for a request (at least one token is always computed)."""
        hit_blocks = 0
        for digest in hashes:
            if digest not in self._blocks:
                break
            self._blocks.move_to_end(digest)
            hit_blocks += 1
        return min(hit_blocks * self.block_size, max(0, prompt_tokens - 1))

    def insert(self, hashes: list[bytes]) -> None:
        for digest in hashes:
            self._blocks[digest] = None
            self._blocks.move_to_end(digest)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)

    def clear(self) -> None:
        self._blocks.clear()


@dataclass(frozen=True)
class Delivery:
    """Tokens `start:end` of a request's output are ready; `finished` marks the last delivery."""

    start: int
    end: int
    finished: bool


@dataclass(eq=False)
class SimRequest:
    request_id: str
    number: int
    endpoint: str
    prompt_tokens: int
    hashes: list[bytes]
    max_tokens: int
    max_tokens_given: bool
    output: list[str]
    natural_stop: bool
    stop_reason: str | None
    acceptance: list[float]
    rng: random.Random
    arrival: float
    not_before: float
    outbox: asyncio.Queue[Delivery] = field(default_factory=asyncio.Queue)
    cached_tokens: int = 0
    scheduled_at: float | None = None
    first_token_at: float | None = None
    last_token_at: float | None = None
    finished_at: float | None = None
    generated: int = 0
    drafted: int = 0
    accepted: int = 0
    verify_steps: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    aborted: bool = False
    slot: int = 0
    prefill_s: float = 0.0

    @property
    def target_tokens(self) -> int:
        return len(self.output)

    @property
    def computed_prompt_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens

    def text(self, start: int = 0, end: int | None = None) -> str:
        return "".join(self.output[start:end])


@dataclass(frozen=True)
class StepRecord:
    request: SimRequest
    emitted: int
    drafted: int
    accepted: int
    first: bool
    gap_s: float  # time since this request's previous output (0 for the first token)


@dataclass
class StepReport:
    end: float
    prefilled: list[SimRequest]
    records: list[StepRecord]
    running: int
    waiting: int
    kv_used_tokens: int
    kv_capacity_tokens: int

    @property
    def decode_records(self) -> list[StepRecord]:
        return [record for record in self.records if not record.first]

    def drafts(self, k: int) -> tuple[int, int, int, list[int]]:
        """Verification steps, drafted and accepted tokens, and steps that accepted position i (i < k)."""
        steps = drafted = accepted = 0
        per_pos = [0] * k
        for record in self.records:
            if record.drafted:
                steps += 1
                drafted += record.drafted
                accepted += record.accepted
                for position in range(min(record.accepted, k)):
                    per_pos[position] += 1
        return steps, drafted, accepted, per_pos


class EngineObserver:
    """Hooks the engine calls synchronously; subclasses override what they need."""

    def request_scheduled(self, request: SimRequest) -> None: ...

    def step_done(self, report: StepReport) -> None: ...

    def request_finished(self, request: SimRequest) -> None: ...

    def load_changed(self, running: int, waiting: int, kv_used_tokens: int, kv_capacity_tokens: int) -> None:
        """Between steps (e.g. an abort while idle), so gauges do not go stale."""


class MetricsRecorder(EngineObserver):
    """One subclass per server flavour (`metrics_vllm`, `metrics_sglang`, `metrics_llamacpp`)."""

    content_type = "text/plain; version=0.0.4; charset=utf-8"

    def render(self) -> bytes:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        return {}

    def idle_tick(self, now: float, running: int, waiting: int) -> None:
        """Called about once a second, for servers that re-publish gauges while idle."""

    def http_request(
        self, method: str, path: str, status: int, request_bytes: int, response_bytes: int, duration_s: float
    ) -> None: ...


@dataclass
class EngineTotals:
    """Model-time accounting, for speed comparisons that do not depend on wall-clock jitter."""

    busy_model_s: float = 0.0
    generated_tokens: int = 0


class SimEngine:
    def __init__(self, config: SimConfig, behaviour: Behaviour, faults: FaultSettings, seed: int = 0) -> None:
        self.config = config
        self.behaviour = behaviour
        self.faults = faults
        self.max_num_seqs = config.max_num_seqs
        self.kv_capacity_tokens = config.kv_cache_tokens()
        self.prefix_cache = PrefixCache(self.kv_capacity_tokens // config.block_size, config.block_size)
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.observers: list[EngineObserver] = []
        self.totals = EngineTotals()
        self._seed = seed
        self._numbers = itertools.count(1)
        self._lossy_rng = random.Random(seed ^ 0x5EED)
        self._free_slots: list[int] = list(range(self.max_num_seqs - 1, -1, -1))
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._next_stall_at: float | None = None
        self.adaptive = AdaptiveSteps(config.adaptive, config.adaptive_start) if config.adaptive else None

    # ---- requests -------------------------------------------------------------------------------
    def new_request(
        self,
        *,
        endpoint: str,
        prompt_text: str,
        prompt_tokens: int | None = None,
        max_tokens: int | None,
        temperature: float = 0.0,
        seed: int | None = None,
        stop: list[str] | None = None,
        ignore_eos: bool = False,
    ) -> SimRequest:
        """Build a request (tokenize, generate its output) without submitting it."""
        tokens = tokenize(prompt_text)[:MAX_PROMPT_TOKENS]
        n_prompt = prompt_tokens if prompt_tokens is not None else len(tokens)
        room = max(1, self.config.max_model_len - n_prompt)
        limit = min(max_tokens if max_tokens is not None else room, room, MAX_OUTPUT_TOKENS)
        output, natural = generate(
            prompt_text, limit, temperature=temperature, seed=seed, ignore_eos=ignore_eos
        )
        stop_reason = None
        if stop:
            output, stop_reason = _apply_stop(output, stop)
            natural = natural or stop_reason is not None
        number = next(self._numbers)
        now = time.monotonic()
        rng = random.Random(hash((self._seed, number)) & 0xFFFFFFFF)
        return SimRequest(
            request_id=f"{number:08x}{rng.getrandbits(64):016x}",
            number=number,
            endpoint=endpoint,
            prompt_tokens=n_prompt,
            hashes=block_hashes(tokens, self.config.block_size) if self.config.enable_prefix_caching else [],
            max_tokens=limit,
            max_tokens_given=max_tokens is not None,
            output=output,
            natural_stop=natural,
            stop_reason=stop_reason,
            acceptance=self.behaviour.request_acceptance(prompt_text, temperature, n_prompt),
            rng=rng,
            arrival=now,
            not_before=now + self.faults.slow_first_token_s,
            accepted_per_pos=[0] * self.behaviour.k,
        )

    def submit(self, request: SimRequest) -> None:
        self.waiting.append(request)
        self._wake.set()

    def abort(self, request: SimRequest) -> None:
        """The client went away: an unfinished request leaves the engine at the next step."""
        if request.finish_reason is None:
            request.aborted = True
            self._wake.set()

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="spectop-sim-engine")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for request in [*self.running, *self.waiting]:
            request.finish_reason = request.finish_reason or "abort"
            request.outbox.put_nowait(Delivery(request.generated, request.generated, True))
        self.running.clear()
        self.waiting.clear()

    @property
    def kv_used_tokens(self) -> int:
        return sum(request.prompt_tokens + request.generated for request in self.running)

    # ---- the loop -------------------------------------------------------------------------------
    async def _run(self) -> None:
        next_at = time.monotonic()
        while True:
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
                next_at = time.monotonic()
            await self._maybe_stall()
            now = time.monotonic()
            self._drop_aborted(now)
            admitted = self._admit(now)
            decoding = list(self.running)
            if not admitted and not decoding:
                await self._idle_until_ready(now)
                next_at = time.monotonic()
                continue
            computed = sum(request.computed_prompt_tokens for request in admitted)
            batch = len(decoding) + len(admitted)
            k = self.step_k(batch)
            drafts = None if k == self.behaviour.k else k  # None: the configured k (a tree verifies more)
            context = sum(r.prompt_tokens + r.generated for r in decoding)
            model_s = self.behaviour.decode_step_s(batch, drafts) + self.behaviour.context_s(context, drafts)
            if admitted:
                model_s += self.behaviour.prefill_s(computed)
            start = time.monotonic()
            next_at = max(next_at, start - 0.05) + model_s / self.behaviour.speed
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            self._finish_step(start, model_s, admitted, decoding, k)

    def step_k(self, batch: int) -> int:
        """Draft tokens of a step at this batch size (vLLM's k-by-batch-size table, SGLang's tier)."""
        steps = self.config.k_at(batch) if self.adaptive is None else self.adaptive.steps_for(batch)
        return min(self.behaviour.k, steps)

    async def _maybe_stall(self) -> None:
        every, length = self.faults.stall_every_s, self.faults.stall_s
        if every <= 0 or length <= 0:
            self._next_stall_at = None
            return
        now = time.monotonic()
        if self._next_stall_at is None:
            self._next_stall_at = now + every
        elif now >= self._next_stall_at:
            await asyncio.sleep(length)
            self._next_stall_at = time.monotonic() + every

    async def _idle_until_ready(self, now: float) -> None:
        """Everything waiting is held back (slow-first-token fault or no KV room): wait a little."""
        ready_at = min((request.not_before for request in self.waiting), default=now + 0.01)
        self._wake.clear()
        # asyncio.timeout, not wait_for: on 3.11 wait_for drops a cancel that lands as the wait ends.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.001, min(0.05, ready_at - now))):
                await self._wake.wait()

    def _drop_aborted(self, now: float) -> None:
        dropped = [request for request in (*self.running, *self.waiting) if request.aborted]
        if not dropped:
            return
        self.running = [request for request in self.running if not request.aborted]
        self.waiting = deque(request for request in self.waiting if not request.aborted)
        for request in dropped:
            self._finish(request, "abort", now)
        for observer in self.observers:
            observer.load_changed(
                len(self.running), len(self.waiting), self.kv_used_tokens, self.kv_capacity_tokens
            )

    def _admit(self, now: float) -> list[SimRequest]:
        admitted: list[SimRequest] = []
        kv_used = self.kv_used_tokens
        deferred: list[SimRequest] = []
        while self.waiting and len(self.running) + len(admitted) < self.max_num_seqs:
            request = self.waiting.popleft()
            if request.not_before > now:
                deferred.append(request)
                continue
            if kv_used + request.prompt_tokens + 1 > self.kv_capacity_tokens and (self.running or admitted):
                self.waiting.appendleft(request)
                break
            request.cached_tokens = self.prefix_cache.lookup(request.hashes, request.prompt_tokens)
            request.scheduled_at = now
            request.slot = self._free_slots.pop() if self._free_slots else 0
            kv_used += request.prompt_tokens
            admitted.append(request)
            for observer in self.observers:
                observer.request_scheduled(request)
        self.waiting.extendleft(reversed(deferred))
        return admitted

    def _finish_step(
        self, start: float, model_s: float, admitted: list[SimRequest], decoding: list[SimRequest], k: int
    ) -> None:
        end = time.monotonic()
        records: list[StepRecord] = []
        for request in admitted:
            request.prefill_s = end - (request.scheduled_at or start)
            request.first_token_at = end
            request.last_token_at = end
            request.generated = 1
            self.prefix_cache.insert(request.hashes)
            records.append(StepRecord(request, 1, 0, 0, True, 0.0))
        lossy = self.faults.lossy_rate
        for request in decoding:
            remaining = request.target_tokens - request.generated
            if remaining <= 0:
                continue
            # The verifier's result counts in the spec statistics even when max_tokens cuts the output.
            accepted = draw_accepted(request.rng, request.acceptance[:k]) if k else 0
            emitted = min(accepted + 1, remaining)
            if k:
                request.drafted += k
                request.verify_steps += 1
                request.accepted += accepted
                for position in range(min(accepted, len(request.accepted_per_pos))):
                    request.accepted_per_pos[position] += 1
                if lossy > 0:
                    for offset in range(emitted - 1):
                        if self._lossy_rng.random() < lossy:
                            index = request.generated + offset
                            request.output[index] = wrong_token(request.output[index], request.number + index)
            gap = end - (request.last_token_at or end)
            request.generated += emitted
            request.last_token_at = end
            records.append(StepRecord(request, emitted, k, accepted, False, gap))
        if self.adaptive is not None:  # SGLang counts every decode batch, drafting or not (tier 0)
            verified = [record.accepted for record in records if not record.first]
            self.adaptive.observe(len(admitted) + len(decoding), verified)
        self.running.extend(admitted)
        finished_now = [r.request for r in records if r.request.generated >= r.request.target_tokens]
        for request in finished_now:
            self.running.remove(request)  # stats after the step count finished requests out, as vLLM's do
        self.totals.busy_model_s += model_s
        self.totals.generated_tokens += sum(record.emitted for record in records)
        report = StepReport(
            end=end,
            prefilled=admitted,
            records=records,
            running=len(self.running),
            waiting=len(self.waiting),
            kv_used_tokens=self.kv_used_tokens,
            kv_capacity_tokens=self.kv_capacity_tokens,
        )
        for observer in self.observers:
            observer.step_done(report)
        for record in records:
            request = record.request
            done = request.generated >= request.target_tokens
            request.outbox.put_nowait(Delivery(request.generated - record.emitted, request.generated, done))
            if done:
                self._finish(request, "stop" if request.natural_stop else "length", end)

    def _finish(self, request: SimRequest, reason: str, now: float) -> None:
        request.finish_reason = reason
        request.finished_at = now
        if request.scheduled_at is not None:
            self._free_slots.append(request.slot)
        if reason == "abort":
            request.outbox.put_nowait(Delivery(request.generated, request.generated, True))
        for observer in self.observers:
            observer.request_finished(request)


def _apply_stop(output: list[str], stops: list[str]) -> tuple[list[str], str | None]:
    """Cut the output before the first stop string; the token that completed it still counts."""
    text = ""
    for index, token in enumerate(output):
        text += token
        found = [(text.find(stop), stop) for stop in stops if stop and stop in text]
        if not found:
            continue
        cut, stop = min(found)
        kept: list[str] = []
        length = 0
        for piece in output[: index + 1]:
            kept.append(piece[: max(0, cut - length)])
            length += len(piece)
        return kept, stop
    return output, None
