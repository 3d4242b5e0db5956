"""Running a tune: per value, change the file, restart, wait, measure every load; then restore."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import httpx

from tui.bench.burst_store import bursts_dir, save_burst
from tui.bench.context import sized_for_server
from tui.bench.engine import ArmUnreachable, BurstConfigError, BurstProgress
from tui.bench.prompts import PromptSetError
from tui.bench.session import BurstCancelled, BurstRequest, BurstRequestError, BurstSession, EndpointArm
from tui.bench.transport import client_or_own
from tui.configs.atomic import SaveError, atomic_write
from tui.configs.document import ConfigDocument
from tui.configs.editing import ChangedOnDiskError, OpenedConfig, masked_diff, open_config_async, unified_diff
from tui.configs.errors import ConfigError
from tui.configs.restart import (
    HEALTH_TIMEOUT_S,
    OLD_PROCESS,
    RESTART_TIMEOUT_S,
    ServerIdentity,
    StartFailureWatch,
    last_errors,
    read_identity,
    restart_command_problem,
    run_restart,
    wait_for_health,
)
from tui.configs.spec_table import VLLM_DEFAULT_MAX_NUM_SEQS
from tui.format import fmt_duration, fmt_eta, fmt_rate, fmt_setting
from tui.telemetry.scraper import _connect_error_text, scrape_metrics
from tui.tune.decision import sequential_level
from tui.tune.plan import TuneKey, TunePlanError, check_values, default_key, edited, edited_table, grid_key
from tui.tune.result import (
    NOT_WRITTEN,
    AppliedChange,
    CellRun,
    TuneCell,
    TuneResult,
    ValueOutcome,
    analyse,
    analyse_all,
    apply_decision,
    cell_from_arm,
    merged_cell,
    table_decision,
    tune_file_name,
)

RESTART_OUTPUT_LINES = 40
MAX_NUM_SEQS = ("scheduler", "max_num_seqs")
METRICS_POLL_S = 0.5
PREFLIGHT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class TuneOptions:
    config_file: Path
    endpoint: str  # the server's base URL
    restart_command: list[str]
    key: str | None = None
    grid: tuple[str, ...] | None = None  # SGLang `steps=1,2,3 topk=1,4 draft=2,4,8` (replaces key/values)
    values: tuple[int, ...] = (0, 1, 2, 3, 4)
    concurrencies: tuple[int, ...] = (1, 8, 32)
    requests: int = 32
    rounds: int = 1  # passes over every value (a restart each), the baseline measured again after each
    until_separated: bool = False  # add rounds until every load's best is separated from the runner-up
    max_rounds: int = 6  # with until_separated: the most rounds (the looks the level is split over)
    budget_s: float | None = None  # with until_separated: no new round that would end after this
    warmup: int = 1
    prompts: str = "mixed"
    max_tokens: int | None = 128
    seed: int | None = 0
    metrics_url: str | None = None
    health_url: str | None = None
    log_file: Path | None = None
    model: str | None = None
    api_key_env: str | None = None
    health_timeout_s: float = HEALTH_TIMEOUT_S
    restart_timeout_s: float = RESTART_TIMEOUT_S
    apply: bool = False
    apply_at: int | None = None  # the concurrency whose best value --apply writes (default: the first)
    prompt_tokens: tuple[int, ...] | None = None  # the context axis: prompt lengths (the set at each)
    keep_history: bool = True
    history_dir: Path | None = None

    @property
    def resolved_metrics_url(self) -> str:
        return self.metrics_url or self.endpoint.rstrip("/") + "/metrics"

    @property
    def resolved_health_url(self) -> str:
        return self.health_url or self.endpoint.rstrip("/") + "/health"

    def changer(self, client: httpx.AsyncClient, on_line: Callable[[str], None] | None = None) -> Changer:
        """The change-and-verify step on this tune's file, restart command and server."""
        return Changer(
            self.config_file,
            self.restart_command,
            client,
            health_url=self.resolved_health_url,
            metrics_url=self.resolved_metrics_url,
            log_file=self.log_file,
            health_timeout_s=self.health_timeout_s,
            restart_timeout_s=self.restart_timeout_s,
            on_line=on_line,
        )


@dataclass
class TuneProgress:
    """Where the sweep is: which value, which load, what it is doing, and the time left (None: unknown)."""

    phase: str  # "restart" | "health" | "burst" | "restore" | "apply" | "done"
    value: int | None
    concurrency: int | None
    step: int  # bursts done
    steps: int  # bursts planned
    elapsed_s: float
    eta_s: float | None
    message: str = ""
    burst_fraction: float = 0.0


class Interrupted(Exception):
    """A wait ended because its event was set first (a signal, the screen's cancel)."""


T = TypeVar("T")


async def until(event: asyncio.Event | None, awaitable: Awaitable[T]) -> T:
    """What `awaitable` gives, unless `event` is set first: then it is cancelled and Interrupted raised."""
    if event is None:
        return await awaitable
    if event.is_set():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise Interrupted
    task = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task  # a restart command is killed and reaped (run_restart's finally)
    if task.cancelled():
        raise Interrupted
    return task.result()


@dataclass
class ChangeOutcome:
    ok: bool
    reason: str | None
    output: list[str] = field(default_factory=list)


@dataclass
class Changer:
    """Writes a text to the config file, restarts the server and waits for it (shared with the guard)."""

    path: Path
    restart_command: Sequence[str]
    client: httpx.AsyncClient
    health_url: str
    metrics_url: str
    log_file: Path | None = None
    health_timeout_s: float = HEALTH_TIMEOUT_S
    restart_timeout_s: float = RESTART_TIMEOUT_S
    on_line: Callable[[str], None] | None = None

    def write(self, data: bytes) -> None:
        """Atomically, symlink and owner kept; the file's bytes are exactly `data`."""
        if self.path.read_bytes() != data:
            atomic_write(self.path, data, backup=False)

    async def write_and_restart(self, data: bytes) -> ChangeOutcome:
        """`write` off the loop, then `restart`: the outcome says why not when either fails."""
        try:
            await asyncio.to_thread(self.write, data)
        except (SaveError, OSError) as error:
            return ChangeOutcome(False, f"cannot write {self.path}: {error}")
        return await self.restart()

    async def restart(
        self, cancel: asyncio.Event | None = None, kill: asyncio.Event | None = None
    ) -> ChangeOutcome:
        """Restart, then wait for /health and /metrics; Interrupted on `cancel` or `kill`."""
        log_start = _size(self.log_file)
        before = await until(cancel, read_identity(self.client, self.metrics_url))
        ran = await self.run_command(log_start, kill)
        if not ran.ok:
            return ran
        return await until(cancel, self._wait_back(before, ran.output, log_start))

    async def run_command(self, log_start: int, kill: asyncio.Event | None = None) -> ChangeOutcome:
        """Run the restart command (ok: exit 0); `kill` is cleared first, then stops it (Interrupted)."""
        if kill is not None:
            kill.clear()
        output: list[str] = []

        def line(text: str) -> None:
            output.append(text)
            del output[:-RESTART_OUTPUT_LINES]
            if self.on_line is not None:
                self.on_line(text)

        try:
            code = await until(
                kill, run_restart(list(self.restart_command), line, timeout_s=self.restart_timeout_s)
            )
        except OSError as error:
            return ChangeOutcome(False, f"the restart command cannot run: {error.strerror or error}", output)
        except TimeoutError:
            why = f"the restart command ran over {fmt_setting(self.restart_timeout_s)} s"
            return ChangeOutcome(False, why, output)
        if code != 0:
            why = self._why(f"the restart command exited with code {code}", output, log_start)
            return ChangeOutcome(False, why, output)
        return ChangeOutcome(True, None, output)

    async def _wait_back(
        self, before: ServerIdentity | None, output: list[str], log_start: int
    ) -> ChangeOutcome:
        details: list[str] = []
        watch = StartFailureWatch(self.log_file, log_start) if self.log_file is not None else None

        async def died() -> str | None:
            return await asyncio.to_thread(watch.poll) if watch is not None else None

        healthy = await wait_for_health(
            self.client,
            self.health_url,
            lambda _back, detail, _elapsed: details.append(detail),
            timeout_s=self.health_timeout_s,
            interval_s=0.25,
            before=before,
            died=died,
        )
        if not healthy and watch is not None and watch.reason is not None:
            return ChangeOutcome(False, f"{self.health_url} not OK: {watch.reason}", output)
        if not healthy:
            reason = f"{self.health_url} not OK within {fmt_setting(self.health_timeout_s)} s"
            if details and OLD_PROCESS in details[-1]:
                reason += f" ({OLD_PROCESS})"
            return ChangeOutcome(False, self._why(reason, output, log_start), output)
        if not await self.first_metrics():
            reason = f"no /metrics page at {self.metrics_url} within {fmt_setting(self.health_timeout_s)} s"
            return ChangeOutcome(False, self._why(reason, output, log_start), output)
        return ChangeOutcome(True, None, output)

    async def first_metrics(self) -> bool:
        deadline = time.monotonic() + self.health_timeout_s
        while True:
            scrape = await scrape_metrics(self.client, self.metrics_url, timeout_s=3.0)
            if scrape.up:
                return True
            if time.monotonic() + METRICS_POLL_S > deadline:
                return False
            await asyncio.sleep(METRICS_POLL_S)

    def _why(self, what: str, output: list[str], log_start: int) -> str:
        errors = last_errors(self.log_file, 3, start=log_start) if self.log_file else []
        if not errors:
            errors = [text for text in output if text.strip()][-2:]
        return what + (": " + " | ".join(errors) if errors else "")


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path else 0
    except OSError:
        return 0


async def preflight(options: TuneOptions) -> str | None:
    """Why the tune cannot start (None: it can): the restart program must exist, the server answer."""
    problem = restart_command_problem(options.restart_command)
    if problem is not None:
        return f"--restart-command: {problem}"
    url = options.resolved_health_url
    async with httpx.AsyncClient(timeout=PREFLIGHT_TIMEOUT_S) as client:
        try:
            response = await client.get(url)
        except httpx.ConnectError as error:
            return f"{url}: {_connect_error_text(error)}: is the server running? (--endpoint, --health-url)"
        except httpx.TimeoutException:
            return f"{url}: no answer within {fmt_setting(PREFLIGHT_TIMEOUT_S)} s (--endpoint, --health-url)"
        except httpx.HTTPError as error:
            return f"{url}: {type(error).__name__}: {error}"
    if not response.is_success:
        code = response.status_code
        return f"{url} answers HTTP {code}: a tune starts from a server that is up (--health-url)"
    return None


class TuneCancelled(Exception):
    """The sweep was cancelled (Ctrl-C, SIGTERM, the screen's cancel)."""


class TuneRun:
    """One sweep. `prepare()` reads the file and plans; `run(cancel)` sweeps and always finishes."""

    def __init__(
        self,
        options: TuneOptions,
        *,
        on_progress: Callable[[TuneProgress], None] | None = None,
        on_update: Callable[[TuneResult], None] | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        self.options = options
        self.on_progress = on_progress
        self.on_update = on_update
        self.on_line = on_line
        self.opened: OpenedConfig | None = None
        self.original_bytes = b""
        self.key: TuneKey | None = None
        self.result: TuneResult | None = None
        self.order: list[int] = []  # the baseline first, then the other values (one round)
        self._started = time.monotonic()
        self._done_steps = 0
        self._touched = False  # the server was restarted on another text than the original
        self._written_stamp_bytes: bytes | None = None
        self._cancel = asyncio.Event()  # run()'s: the sweep stops at its next step
        self._kill: asyncio.Event | None = None  # run()'s: stops a restart command under way

    async def prepare(self) -> TuneResult:
        """Read the config and plan; TunePlanError / ConfigError when the sweep cannot be done."""
        options = self.options
        self.opened = await open_config_async(options.config_file)
        if self.opened.document is None:
            assert self.opened.syntax_error is not None
            raise TunePlanError(f"{options.config_file}: {self.opened.syntax_error}")
        self.original_bytes = options.config_file.read_bytes()
        doc = self.opened.document
        if options.grid:
            self.key = grid_key(doc, options.grid)
            swept = self.key.values
        else:
            self.key = default_key(doc, options.key)
            check_values(self.key, options.values)
            swept = options.values
        for value in swept:  # every value must make a valid file before anything restarts
            try:
                edited(doc, self.key, value, doc)
            except ConfigError as error:
                raise TunePlanError(f"{self.key.label(value)}: {error}") from None
        original = self.key.current(doc)
        values = list(swept)
        baseline = 0 if 0 in values else original
        if baseline is None:
            raise TunePlanError("no baseline: sweep value 0, or give the file a value for the key")
        if baseline not in values:
            values.append(baseline)
        notes = []
        if options.apply and original is not None and original not in values:
            values.append(original)  # --apply compares the pick with the file's own value
            notes.append(f"{self.key.label(original)} (the file's own value) added: --apply compares with it")
        self.order = [baseline] + [value for value in values if value != baseline]
        sequential = options.until_separated
        looks = max(1, options.max_rounds) if sequential else 1
        if options.apply_at is not None and options.apply_at not in options.concurrencies:
            raise TunePlanError(f"--apply-at {options.apply_at}: not one of --concurrency")
        self.result = TuneResult(
            started_at=datetime.now(UTC),
            config_file=str(options.config_file),
            kind=doc.kind,
            key=self.key.name,
            endpoint=options.endpoint,
            restart_command=list(options.restart_command),
            values=values,
            concurrencies=list(options.concurrencies),
            original_value=original,
            baseline_value=baseline,
            requests=options.requests,
            max_tokens=options.max_tokens,
            prompts=options.prompts,
            points=list(self.key.points),
            skipped=list(self.key.skipped),
            zero_is_off=self.key.style != "plain",
            rounds=options.max_rounds if sequential else options.rounds,
            ci_level=sequential_level(looks),
            looks=looks,
            until_separated=sequential,
            notes=notes,
            prompt_tokens=list(options.prompt_tokens or []),
        )
        return self.result

    def text_for(self, value: int) -> str:
        assert self.opened is not None and self.opened.document is not None and self.key is not None
        doc: ConfigDocument = self.opened.document
        return edited(doc, self.key, value, doc).text

    def diff_for(self, value: int) -> str:
        assert self.opened is not None
        # kept in the result (exports, history) and printed: a secret the file holds is masked
        return masked_diff(
            unified_diff(self.opened.text, self.text_for(value), self.options.config_file.name)
        )

    async def run(
        self,
        cancel: asyncio.Event | None = None,
        client: httpx.AsyncClient | None = None,
        *,
        wait_when_cancelled: bool = True,
        kill: asyncio.Event | None = None,
    ) -> TuneResult:
        """Sweep every value; however it ends, the file is restored (or applied) and the server restarted."""
        if self.result is None:
            await self.prepare()
        assert self.result is not None
        cancel = self._cancel = cancel or asyncio.Event()
        self._kill = kill
        self._started = time.monotonic()
        async with client_or_own(client) as client:
            await self._say_sizing(client)
            changer = self.options.changer(client, self.on_line)
            # A restart command under way runs to its end unless `kill` is set: the final one never races it.
            sweep = asyncio.ensure_future(self._sweep(changer))
            try:
                await sweep
            except TuneCancelled:
                pass
            except asyncio.CancelledError:  # the caller's task was cancelled (e.g. a closing screen)
                cancel.set()
                sweep.cancel()
                with contextlib.suppress(asyncio.CancelledError, TuneCancelled):
                    await sweep
            finally:
                cancelled = self.result.cancelled = cancel.is_set()
                apply, wait = self.options.apply and not cancelled, wait_when_cancelled or not cancelled
                # Shielded: a second Ctrl-C must not leave the file half-way.
                await asyncio.shield(self._finish(changer, apply=apply, wait=wait))
        return self.result

    async def _say_sizing(self, client: httpx.AsyncClient) -> None:
        """How each prompt length of the context axis is reached, in the notes."""
        assert self.result is not None
        options = self.options
        for tokens in options.prompt_tokens or ():
            try:
                said = (
                    await sized_for_server(f"{options.prompts}@{tokens}", options.endpoint, client)
                ).sizing
            except PromptSetError as error:
                said = str(error)
            self.result.notes.append(f"prompts at {tokens} tokens: {said}")

    async def _sweep(self, changer: Changer) -> None:
        """Rounds over every value, the baseline at each end; odd rounds run backwards against drift."""
        assert self.result is not None
        baseline, others = self.order[0], self.order[1:]
        position = 0
        if not await self._value_round(changer, baseline, 0, position):
            return
        for number in itertools.count():
            visits = [(value, number) for value in (others if number % 2 == 0 else others[::-1])]
            for value, round_number in [*visits, (baseline, number + 1)]:
                position += 1
                if not await self._value_round(changer, value, round_number, position):
                    return
            self.result.rounds_run = number + 1
            self.result.stop_reason = self._stop_reason(number + 1)
            if self.result.stop_reason is not None:
                return

    def _stop_reason(self, rounds: int) -> str | None:
        """Why no further round runs (None: run another)."""
        options = self.options
        if not options.until_separated:
            return None if rounds < options.rounds else f"--rounds {options.rounds}"
        assert self.result is not None
        looked = analyse(self.result)
        open_loads = [d.concurrency for d in looked.decisions if not d.significant and d.best is not None]
        if not open_loads:
            return f"separated at every load after {rounds} round{'s' if rounds != 1 else ''}"
        loads = ", ".join(f"c={c}" for c in open_loads)
        if rounds >= options.max_rounds:
            return f"--max-rounds {options.max_rounds} reached; still within noise at {loads}"
        elapsed = time.monotonic() - self._started
        if options.budget_s is not None and elapsed + elapsed / rounds > options.budget_s:
            return (
                f"--budget {fmt_setting(options.budget_s)} s: another round would end after it; "
                f"within noise at {loads}"
            )
        return None

    async def _value_round(self, changer: Changer, value: int, number: int, position: int) -> bool:
        """Write `value`, restart, measure every load; False when the sweep must stop (cannot save)."""
        assert self.result is not None and self.key is not None
        if self._cancel.is_set():
            raise TuneCancelled
        outcome = self.result.outcome(value)
        if outcome is None:
            outcome = ValueOutcome(value=value, started=False, diff=self.diff_for(value))
            self.result.outcomes.append(outcome)
        elif not outcome.started:  # it did not start before: not tried again
            self._done_steps += self._loads
            return True
        self._progress(
            "restart", value, None, f"round {number + 1}: writing {self.key.label(value)}, restarting"
        )
        try:
            self._save(changer, self.text_for(value).encode("utf-8"))
        except (ChangedOnDiskError, SaveError) as error:
            outcome.failure = f"cannot save: {error}"
            self.result.notes.append(f"sweep stopped: {error}")
            self._update()
            return False
        self._touched = True
        try:
            change = await changer.restart(self._cancel, self._kill)
        except Interrupted:
            if not outcome.started:  # cancelled before it could start: not reached, rather than failed
                self.result.outcomes.remove(outcome)
            raise TuneCancelled from None
        outcome.restart_output = change.output[-10:]
        if not change.ok:
            outcome.failure = change.reason
            if outcome.started:
                self.result.notes.append(f"{self.key.label(value)} did not restart in round {number + 1}")
            self._done_steps += self._loads
            self._update()
            return True
        outcome.started = True
        for concurrency in self.options.concurrencies:
            for tokens in self.options.prompt_tokens or (None,):
                if self._cancel.is_set():
                    raise TuneCancelled
                await self._measure(outcome, concurrency, number, position, tokens)
                self._done_steps += 1
                self._update()
        return True

    @property
    def _loads(self) -> int:
        """Bursts per value and round: every concurrency at every prompt length."""
        return len(self.options.concurrencies) * len(self.options.prompt_tokens or (None,))

    def _save(self, changer: Changer, data: bytes) -> None:
        path = self.options.config_file
        if self._written_stamp_bytes is not None and path.read_bytes() != self._written_stamp_bytes:
            raise ChangedOnDiskError(f"{path} changed on disk during the tune (someone else edited it)")
        changer.write(data)
        self._written_stamp_bytes = data

    async def _measure(
        self, outcome: ValueOutcome, concurrency: int, number: int, position: int, tokens: int | None
    ) -> None:
        assert self.result is not None and self.key is not None
        options, value = self.options, outcome.value
        label = self.key.label(value)
        at = f" at {tokens} prompt tokens" if tokens is not None else ""
        request = BurstRequest.parse(
            {
                "a": EndpointArm(
                    name=label,
                    base_url=options.endpoint,
                    metrics_url=options.metrics_url,
                    model=options.model,
                ),
                "prompts": options.prompts if tokens is None else f"{options.prompts}@{tokens}",
                "requests": max(options.requests, concurrency),
                "concurrency": concurrency,
                "rounds": 1,
                "warmup": max(options.warmup, 0),
                "max_tokens": options.max_tokens,
                "temperature": 0.0,
                "seed": options.seed,
                "api_key_env": options.api_key_env,
            }
        )
        where = f"{label} at concurrency {concurrency}{at}"
        self._progress("burst", value, concurrency, where)

        def progress(burst: BurstProgress) -> None:
            self._progress("burst", value, concurrency, where, burst.fraction)

        try:
            ran = await BurstSession(request).run(on_progress=progress, cancel=self._cancel)
        except BurstCancelled:
            raise TuneCancelled from None
        except (BurstRequestError, BurstConfigError, ArmUnreachable) as error:
            if self.result.cell(value, concurrency, tokens) is None:
                outcome.cells.append(
                    TuneCell(
                        value=value,
                        concurrency=concurrency,
                        ok=False,
                        failure=str(error),
                        prompt_tokens=tokens,
                    )
                )
            self.result.notes.append(f"{label} at c={concurrency}{at}, round {number + 1}: {error}")
            return
        assert ran.ran is not None
        arm = ran.ran.arms[0]
        cell = cell_from_arm(value, concurrency, arm, tokens)
        check = arm.client_check
        run = CellRun(
            round=number,
            order=position,
            samples=[sample for r in arm.requests if (sample := r.decode_sample())],
            mean_acceptance_length=cell.mean_acceptance_length,
            client_ok=None if check is None else check.ok,
            client_reason=None if check is None else check.reason,
        )
        if options.keep_history:
            try:
                run.burst_file = str(save_burst(ran.ran, self.bursts_folder()))
            except OSError as error:
                self.result.notes.append(f"a burst could not be kept in the history: {error}")
        earlier = self.result.cell(value, concurrency, tokens)
        merged = merged_cell(earlier if earlier is not None and earlier.ok else None, cell, run)
        here = (concurrency, tokens)
        outcome.cells = [c for c in outcome.cells if (c.concurrency, c.prompt_tokens) != here] + [merged]
        lengths = list(self.options.prompt_tokens or (None,))
        outcome.cells.sort(
            key=lambda c: (self.options.concurrencies.index(c.concurrency), lengths.index(c.prompt_tokens))
        )

    def bursts_folder(self) -> Path:
        """A tune's bursts are kept inside its own folder, so the burst history lists the tune once."""
        assert self.result is not None
        base = self.options.history_dir or bursts_dir()
        return base / tune_file_name(self.result).removesuffix(".json")

    async def _finish(self, changer: Changer, *, apply: bool, wait: bool = True) -> None:
        """Restore the original bytes (or apply the best value), restart on them, and (`wait`) wait for it."""
        assert self.result is not None
        self.result = result = analyse_all(self.result)
        path, stamp = self.options.config_file, self._written_stamp_bytes
        target = self._applied_bytes(result) if apply else self.original_bytes
        self._progress("apply" if result.applied else "restore", None, None, "restoring the config file")
        try:
            on_disk = path.read_bytes()
        except OSError as error:
            on_disk = None
            result.notes.append(f"cannot read {path}: {error}")
        if on_disk is not None and stamp is not None and on_disk != stamp:
            result.notes.append(f"{path} was changed by someone else during the tune: left as it is")
            target = on_disk
        try:
            changer.write(target)
            result.restored = target == self.original_bytes
        except (SaveError, OSError) as error:
            result.notes.append(f"could not write {path}: {error}")
        if self._touched or result.applied:
            kill = self._kill
            try:
                change = await (
                    changer.restart(kill=kill) if wait else changer.run_command(_size(changer.log_file), kill)
                )
            except Interrupted:
                change = ChangeOutcome(False, "the restart command was stopped by a signal")
            result.final_restart_ok = change.ok if wait or not change.ok else None
            result.final_restart_waited = wait
            if not change.ok:
                result.notes.append(f"the final restart failed: {change.reason}")
        result.duration_s = time.monotonic() - self._started
        self._progress("done", None, None, "done")
        self._update()

    def _applied_bytes(self, result: TuneResult) -> bytes:
        """What `--apply` writes: vLLM's k-by-batch-size table, else the best value if it beats the file's."""
        concurrency = self.options.apply_at or self.options.concurrencies[0]
        assert self.opened is not None and self.opened.document is not None
        doc = self.opened.document
        table, table_why = None, ""
        if self.options.apply_at is None:
            top = doc.get(MAX_NUM_SEQS) if doc.has(MAX_NUM_SEQS) else VLLM_DEFAULT_MAX_NUM_SEQS
            table, table_why = table_decision(
                result, top if isinstance(top, int) else VLLM_DEFAULT_MAX_NUM_SEQS
            )
        text = None
        if table is not None:
            try:
                text = edited_table(doc, table).text
            except ConfigError as error:
                table_why = f"the table does not make a valid file: {error}"
        by_context = f" (at {result.primary_context} prompt tokens; {NOT_WRITTEN})"
        context_note = by_context if len(result.prompt_tokens) > 1 else ""
        if table is not None and text is not None:
            result.apply_note = table_why + context_note
            diff = masked_diff(unified_diff(self.opened.text, text, self.options.config_file.name))
            result.applied = AppliedChange(
                value=max(k for _lo, _hi, k in table), concurrency=concurrency, diff=diff, table=table
            )
            return text.encode("utf-8")
        value, why = apply_decision(result, concurrency)
        if len(result.schedule) > 1 and result.kind == "vllm_toml":
            why += f" (no k-by-batch-size table: {table_why or '--apply-at asks for one load'})"
        result.apply_note = why + context_note
        if value is None:
            return self.original_bytes
        result.applied = AppliedChange(value=value, concurrency=concurrency, diff=self.diff_for(value))
        return self.text_for(value).encode("utf-8")

    def _progress(
        self, phase: str, value: int | None, concurrency: int | None, message: str, fraction: float = 0.0
    ) -> None:
        if self.on_progress is None:
            return
        assert self.result is not None or not self.order
        rounds = self.options.rounds
        if self.options.until_separated:
            rounds = (self.result.rounds_run if self.result else 0) + 1
        steps = (1 + max(1, rounds) * len(self.order)) * self._loads
        done = self._done_steps + fraction
        elapsed = time.monotonic() - self._started
        eta = elapsed / done * (steps - done) if done > 0 else None
        self.on_progress(
            TuneProgress(phase, value, concurrency, self._done_steps, steps, elapsed, eta, message, fraction)
        )

    def _update(self) -> None:
        if self.on_update is not None and self.result is not None:
            self.on_update(analyse_all(self.result))


def progress_line(progress: TuneProgress) -> str:
    """ "[3/12] burst k=2 c=8 42%   1 min   ETA 6:10": step, what it does, elapsed, time left."""
    where = f"[{progress.step}/{progress.steps}] {progress.message}"
    if progress.phase == "burst":
        where += f" {fmt_rate(progress.burst_fraction)}"
    return f"{where}   {fmt_duration(progress.elapsed_s)}   {fmt_eta(progress.eta_s)}"
