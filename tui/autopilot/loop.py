"""The loop: watch, propose, and in --auto change one replica, test it, keep or roll back, promote.
Each interval the eyes give every server's figures. While watching, the advisor (pooled over the
replicas that run the same file) names a better k, or where none is better but one k does not fit every
calibrated load, a k by batch size for a vLLM file (`table_offer`); held for `sustained_s` and allowed
by the limits, it is proposed (dry run: said and recorded, nothing changed). In auto mode one canary gets
it: after the quiet period each interval gives a sample of log(canary speed / the unchanged replicas'
mean speed) (one server: / its speed before the change, at matched load), until the sequential test is
clear or the time limit passes. Better: kept, then promoted one replica at a time, each tested as not
worse than the changed ones. Anything else (down, OOM, worse, no difference, unclear, first tokens surely
25% slower, errors surely up): the exact bytes written back."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from tui.advice.advisor import Advice
from tui.advice.fleet import calibrated_first, pooled_figures
from tui.advice.live import KeptModels, TableOffer, advice_for, k_in_effect, table_offer
from tui.advice.stepcost import find_model
from tui.autopilot import audit
from tui.autopilot.audit import AuditRecord, Figure
from tui.autopilot.observe import Errors, Seen, ServerEyes, speed
from tui.autopilot.policy import (
    Judgement,
    Limits,
    PilotState,
    Proposal,
    Sustained,
    Table,
    errors_rose,
    gate,
    judge,
    proposal_words,
)
from tui.autopilot.targets import HEALTH_TIMEOUT_S, Target
from tui.configs.errors import ConfigError
from tui.format import fmt_duration, fmt_per_s, fmt_rate_delta
from tui.tune.plan import TunePlanError, table_k

if TYPE_CHECKING:
    from tui.settings import EndpointSettings

Eyes = Callable[[], Awaitable[dict[str, Seen]]]
TTFT_SLOWER = 0.25  # a change whose first tokens are surely this much slower goes back, whatever its speed
LOAD_INTERVALS = 5  # one server: the load of the last intervals must match the load before the change
BEFORE_SAMPLES = 20  # one server: the intervals before a change, (speed, requests/s), compared with


@dataclass
class Trial:
    """A change under test: which server, from and to which k (or table), the bytes it replaced."""

    target: Target
    from_k: int | None
    to_k: int
    old: bytes
    diff: str
    trigger: str
    started: float
    promotion: bool = False
    predicted: float | None = None  # the advisor's speedup
    from_table: Table | None = None
    to_table: Table | None = None  # a k by batch size (to_k: the file's k with it)
    samples: list[float] = field(default_factory=list)
    mine: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)
    loads: list[float | None] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)  # log(reference TTFT / changed TTFT) per interval
    failed: list[float] = field(default_factory=lambda: [0.0, 0.0])  # the changed one's (failed, answered)
    failed_reference: list[float] = field(default_factory=lambda: [0.0, 0.0])  # fleet: the others'

    @property
    def was(self) -> tuple[int | None, Table | None]:
        return self.from_k, self.from_table

    @property
    def now(self) -> tuple[int | None, Table | None]:
        return self.to_k, self.to_table

    @property
    def to(self) -> str:
        return proposal_words(self.to_table or self.to_k)


def split(proposal: Proposal) -> tuple[int, Table | None]:
    """A proposal as the file's k and k by batch size."""
    return (table_k(proposal), proposal) if isinstance(proposal, list) else (proposal, None)


def figure(values: list[float]) -> Figure:
    """Mean and its 95% interval (normal) of the values."""
    if not values:
        return Figure()
    mean = sum(values) / len(values)
    if len(values) < 2:
        return Figure(mean=mean, samples=1)
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
    return Figure(mean=mean, low=mean - 1.96 * se, high=mean + 1.96 * se, samples=len(values))


class Autopilot:
    def __init__(
        self,
        targets: dict[str, Target],
        eyes: Eyes,
        kept: KeptModels,
        limits: Limits,
        *,
        auto: bool,
        audit_path: Path,
        client: httpx.AsyncClient,
        make_target: Callable[[str, Seen], Target | None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        say: Callable[[str], None] = print,
        on_state: Callable[[dict[str, PilotState]], None] | None = None,
        to_act: str = "--auto to act",  # how a dry run's proposal says to let it act
    ) -> None:
        self.targets, self.eyes, self.kept, self.limits = targets, eyes, kept, limits
        self.to_act = to_act
        self.auto, self.audit_path, self.client = auto, audit_path, client
        self.make_target, self.clock, self.sleep, self.say = make_target, clock, sleep, say
        self.on_state = on_state  # after each interval: what a dashboard shows per instance
        self.k: dict[str, int | None] = {}
        self.tables: dict[str, Table | None] = {}  # the k by batch size each file runs
        self.found: dict[str, bytes] = {}  # as the autopilot found them
        self.verified: dict[str, bytes] = {}  # the last verified state
        self.states: dict[str, PilotState] = {}
        self.changes: list[float] = []
        self.sustained = Sustained(limits.sustained_s)
        self.trial: Trial | None = None
        self.queue: list[str] = []  # replicas still to promote
        self.promoting: Proposal = 0  # the canary's verified k or table
        # one server: (speed, load, TTFT, errors) of the intervals before a change
        self.before: deque[tuple[float, float, float | None, Errors | None]] = deque(maxlen=BEFORE_SAMPLES)
        self._said: set[str] = set()
        self.single = make_target is None

    async def run(self, rounds: int | None = None) -> None:
        """Watch (and act) every interval; on the way out leave each config as found or verified."""
        try:
            for _ in itertools.count() if rounds is None else range(rounds):
                began = self.clock()
                await self.step(await self.eyes())
                await self.rest(began)
        finally:
            await self.leave()

    async def rest(self, began: float) -> None:
        """Sleep what is left of the interval begun at `began` (a slow Prometheus does not stretch it)."""
        await self.sleep(max(0.0, self.limits.interval_s - (self.clock() - began)))

    async def adopt(self, name: str, target: Target) -> None:
        """Take a server in hand: its file's bytes and k as found (one it cannot read is left alone)."""
        try:
            found = await asyncio.to_thread(target.config.read_bytes)
        except OSError as error:
            self.once(f"{name}: left alone: cannot read {target.config}: {error.strerror or error}")
            return
        self.targets[name] = target
        self.found[name] = self.verified[name] = found
        self.k[name], self.tables[name] = await target.running()
        self.states[name] = PilotState(name, k=self.k[name])
        self.record(AuditRecord(outcome="started", instance=name, from_k=self.k[name], reason="as found"))

    async def step(self, seen: dict[str, Seen]) -> None:
        for name, what in sorted(seen.items()):
            known = self.targets.get(name)
            if known is None and self.make_target is not None:
                known = self.make_target(name, what)
            if known is not None and name not in self.found:
                await self.adopt(name, known)
        seen = {name: what for name, what in seen.items() if name in self.found}
        if self.trial is not None:
            await self.test(seen)
        elif self.queue:
            await self.promote_next(seen)
        else:
            await self.watch(seen)
        self.tell()

    def tell(self) -> None:
        if self.on_state is not None:
            self.on_state({name: replace(state) for name, state in self.states.items()})

    def runs(self, name: str) -> tuple[int | None, Table | None]:
        """A server's file: its k and its k by batch size."""
        return self.k.get(name), self.tables.get(name)

    def advice(self, seen: dict[str, Seen]) -> tuple[Advice, TableOffer | None] | None:
        """The advice for the up servers (all running the same file) and, where it names no better k, the
        k by batch size they do not run yet that fits every calibrated load better than one k."""
        up = [name for name, what in seen.items() if what.up]
        runs = [self.runs(name) for name in up]
        if not up or runs.count(runs[0]) != len(runs):
            return None
        pooled, _ = pooled_figures([seen[name].figures for name in up])
        url, model = calibrated_first([(self.targets[name].url, seen[name].model) for name in up], self.kept)
        k, table = runs[0]
        k = k_in_effect(k, table, pooled.running)  # a table is compared at the k it runs at this load
        advice = advice_for(pooled, url, model, self.kept, current_k=k, margin=self.limits.margin)
        if advice.better_k is not None:
            return advice, None
        step_cost, _ = find_model(self.kept.models, url, model, None)
        offer = table_offer(pooled.per_position_acceptance, k, step_cost, margin=self.limits.margin)
        if offer is None or offer.table == table:
            return advice, None
        return replace(advice, table=offer.ranges), offer

    async def watch(self, seen: dict[str, Seen]) -> None:
        now = self.clock()
        if self.single:
            for what in seen.values():
                value = speed(what.figures)
                rate = what.figures.requests_per_s  # the load: running requests fall as a server speeds up
                if what.up and value and rate is not None:
                    self.before.append((value, rate, what.figures.ttft_mean_s, what.errors))
        advice, offer = self.advice(seen) or (None, None)
        up = sorted(name for name, what in seen.items() if what.up)
        if advice is not None and offer is not None:
            try:
                await self.targets[up[0]].edit(table=offer.table)
            except (ConfigError, TunePlanError) as error:  # a table only where vLLM's file takes one
                self.once(f"{up[0]}: no k by batch size ({offer.ranges}) proposed: {error}", "table refused")
                advice, offer = replace(advice, table=None), None
        # `advice` offers a table only where it names no better k
        proposal = offer.table if offer is not None else None if advice is None else advice.better_k
        held_for = self.sustained.observe(proposal, now)
        for state in self.states.values():
            state.words = "watching" if advice is None else f"watching · {advice.line()}"
        if advice is None or proposal is None or held_for is None or not self.sustained.held(now):
            return
        canary = up[0]
        trigger = advice.line() if offer is None else f"one k does not fit every load: {offer.words}"
        blocked = gate(self.limits, self.changes, now, len(up), len(self.targets))
        enough = BEFORE_SAMPLES // 2
        if self.single and blocked is None and len(self.before) < enough:
            blocked = f"too few intervals before the change to compare with: {len(self.before)} of {enough}"
        held, setting = fmt_duration(held_for), proposal_words(proposal)
        words = f"set {setting} on {canary} (k={advice.current_k} now): {trigger}, for {held}"
        if blocked is not None:
            self.once(f"would {words}, but not now: {blocked}", f"blocked {setting} {blocked.split(':')[0]}")
            return
        if not self.auto:
            if self.once(f"would {words} (dry run: {self.to_act})", f"propose {setting}"):
                to_k, to_table = split(proposal)
                record = AuditRecord(outcome="proposed", instance=canary, trigger=trigger, reason="dry run")
                record.from_k, record.to_k, record.to_table = self.k.get(canary), to_k, to_table
                self.record(record)
            return
        predicted = advice.speedup_by_k.get(proposal) if isinstance(proposal, int) else None
        await self.start_trial(canary, proposal, trigger, promotion=False, predicted=predicted)

    async def start_trial(
        self, name: str, proposal: Proposal, trigger: str, *, promotion: bool, predicted: float | None = None
    ) -> None:
        target, now = self.targets[name], self.clock()
        (from_k, from_table), (k, table) = self.runs(name), split(proposal)
        old = await asyncio.to_thread(target.config.read_bytes)
        trial = Trial(target, from_k, k, old, "", trigger, now, promotion, predicted, from_table, table)
        self.say(f"{name}: setting {trial.to} (was {from_k}): {trigger}")
        role = "promoting" if promotion else "canary"
        self.states[name].words = f"{role} {trial.to}: restarting"
        self.tell()
        try:
            change = await target.set_config(self.client, k, table)
        except asyncio.CancelledError:  # Ctrl-C during the restart: the file may have k already; `leave`
            # puts the bytes back (without this trial it took the new k for someone else's edit, left it)
            self.trial = trial
            raise
        self.changes.append(now)
        self.sustained = Sustained(self.limits.sustained_s)  # after this trial, the advice must hold anew
        trial.diff, trial.started = change.diff, self.clock()
        self.k[name], self.tables[name] = k, table
        self.states[name].k = k
        self.states[name].words = f"{role} {trial.to}: restarted, quiet period"
        self.trial = trial
        if not change.ok:
            await self.roll_back(f"did not come back: {change.reason}")

    async def test(self, seen: dict[str, Seen]) -> None:
        trial = self.trial
        assert trial is not None
        name, now = trial.target.name, self.clock()
        if now - trial.started < self.limits.quiet_s:  # the restart's gap may still be in the figures
            return
        mine = seen.get(name)
        if (mine is None or not mine.up) and not await self.healthy(trial.target):
            await self.roll_back("failed health check")
            return
        rose = self.errors_rose(trial, seen)
        if rose is not None:
            await self.roll_back(rose)
            return
        sample = self.sample(trial, seen)
        if sample is not None:
            trial.samples.append(sample)
        verdict = judge(trial.samples, self.limits.margin, non_inferiority=trial.promotion)
        over = now - trial.started - self.limits.quiet_s >= self.limits.test_limit_s
        state, role = self.states[name], "promoting" if trial.promotion else "canary"
        so_far = "no sample yet" if verdict.gain is None else f"{fmt_rate_delta(verdict.gain)} so far"
        state.words = (
            f"{role} {trial.to}, {fmt_duration(now - trial.started)}, {so_far} (not yet significant)"
        )
        moved = self.load_moved(trial)
        if moved is not None and not over:
            state.words += f"; {moved}: waiting"
            self.once(f"{name}: {moved}: waiting", f"moved {len(trial.samples)}")
            return
        if moved is not None:
            await self.roll_back(f"{moved} until the time limit: no verdict")
            return
        slower = judge(trial.ttft, TTFT_SLOWER)
        surely_slower = slower.high is not None and slower.high < -TTFT_SLOWER
        if verdict.verdict != "worse" and surely_slower and slower.gain is not None:
            rise = fmt_rate_delta(1.0 / (1.0 + slower.gain) - 1.0)
            await self.roll_back(
                f"TTFT rose {rise} (surely more than {fmt_rate_delta(TTFT_SLOWER)})", verdict
            )
        elif verdict.verdict in ("better", "not worse"):
            await self.keep(trial, verdict)
        elif verdict.verdict != "inconclusive" or over:
            why = "time limit reached" if verdict.verdict == "inconclusive" else "the change did not pay"
            await self.roll_back(why, verdict)

    def sample(self, trial: Trial, seen: dict[str, Seen]) -> float | None:
        """One interval's log(changed / reference), None when it cannot be compared."""
        name = trial.target.name
        mine = speed(seen[name].figures) if name in seen else None
        if mine is None:
            return None
        if self.single:
            trial.loads.append(seen[name].figures.requests_per_s)
            if not self.before or self.load_moved(trial) is not None:
                return None
            base = sum(s for s, *_ in self.before) / len(self.before)
            ttfts = [t for _, _, t, _ in self.before if t is not None]
        else:
            wanted = trial.now if trial.promotion else trial.was
            others = [
                value for other, what in seen.items()
                if other != name and what.up and self.runs(other) == wanted
                and (not trial.promotion or other not in self.queue)
                and (value := speed(what.figures)) is not None
            ]  # fmt: skip
            if not others:
                return None
            base = sum(others) / len(others)
            ttfts = [t for other, what in seen.items() if other != name and (t := what.figures.ttft_mean_s)]
        trial.mine.append(mine)
        trial.theirs.append(base)
        ttft = seen[name].figures.ttft_mean_s
        if ttft and ttfts:
            trial.ttft.append(math.log(sum(ttfts) / len(ttfts) / ttft))
        return math.log(mine / base) if mine > 0 and base > 0 else None

    def errors_rose(self, trial: Trial, seen: dict[str, Seen]) -> str | None:
        """Counts this interval's answers of the changed server and of its reference (the others at the
        reference k; one server: the intervals before the change); why its errors surely rose, if they did."""
        name, interval = trial.target.name, self.limits.interval_s
        mine = seen[name].errors if name in seen else None
        if mine is None:
            return None  # no counter of failed answers (see observe.py): this check cannot be made
        trial.failed[0] += mine.failed_per_s * interval
        trial.failed[1] += mine.answered_per_s * interval
        if self.single:
            before = [errors for *_, errors in self.before if errors is not None]
            reference = (
                sum(e.failed_per_s for e in before) * interval,
                sum(e.answered_per_s for e in before) * interval,
            )
        else:
            for other, what in seen.items():
                if other != name and what.up and what.errors is not None:
                    trial.failed_reference[0] += what.errors.failed_per_s * interval
                    trial.failed_reference[1] += what.errors.answered_per_s * interval
            reference = (trial.failed_reference[0], trial.failed_reference[1])
        return errors_rose((trial.failed[0], trial.failed[1]), reference)

    def load_moved(self, trial: Trial) -> str | None:
        """One server: why the recent load is not the load before the change (None: matches, unknown)."""
        recent = [value for value in trial.loads[-LOAD_INTERVALS:] if value is not None]
        if not self.single or not recent or not self.before:
            return None
        before = sum(c for _, c, *_ in self.before) / len(self.before)
        after = sum(recent) / len(recent)
        if before > 0 and abs(after / before - 1.0) <= self.limits.max_load_shift:
            return None
        shown = f"{fmt_per_s(after)} requests/s after the change, {fmt_per_s(before)} before"
        return f"the load moved too much to compare ({shown})"

    async def healthy(self, target: Target) -> bool:
        """Its /health answers OK now (a reading that says down is confirmed before a rollback)."""
        try:
            answer = await self.client.get(target.url + "/health", timeout=5.0)
        except httpx.HTTPError:
            return False
        return answer.is_success

    async def keep(self, trial: Trial, verdict: Judgement) -> None:
        name = trial.target.name
        self.verified[name] = await asyncio.to_thread(trial.target.config.read_bytes)
        self.trial = None
        outcome: audit.Outcome = "promoted" if trial.promotion else "kept"
        self.states[name].last = f"{outcome} {trial.to}: {verdict.words()}"
        self.record(self.trial_record(trial, outcome, verdict, "verified"))
        if not trial.promotion:
            self.queue = sorted(n for n in self.found if n != name and self.runs(n) == trial.was)
            self.promoting = trial.to_table or trial.to_k

    async def roll_back(self, why: str, verdict: Judgement | None = None) -> None:
        trial = self.trial
        assert trial is not None
        name = trial.target.name
        words = why if verdict is None else f"{verdict.words()}: {why}"
        back = proposal_words(trial.from_table or trial.from_k)
        self.say(f"{name}: rolling back to {back}: {words}")
        restored = await trial.target.write(self.client, trial.old)
        if trial.promotion and self.queue:
            why += f"; the promotion stops: {len(self.queue) + 1} replica(s) stay at {back}"
        (self.k[name], self.tables[name]), self.trial, self.queue = trial.was, None, []
        self.states[name].k, self.states[name].last = trial.from_k, f"rolled back to {back}: {words}"
        reason = why if restored.ok else f"{why}; the rollback's restart failed too: {restored.reason}"
        self.record(self.trial_record(trial, "rolled_back", verdict, reason))

    async def promote_next(self, seen: dict[str, Seen]) -> None:
        up = [name for name, what in seen.items() if what.up]
        blocked = gate(self.limits, self.changes, self.clock(), len(up), len(self.targets))
        if blocked is not None:
            self.once(f"promotion waits: {blocked}", f"promotion {blocked.split(':')[0]}")
            return
        trigger = f"the verified canary's {proposal_words(self.promoting)}"
        await self.start_trial(self.queue.pop(0), self.promoting, trigger, promotion=True)

    async def leave(self) -> None:
        """An unverified change goes back; then each config is as found or at its last verified state."""
        if self.trial is not None:
            await self.roll_back("interrupted before the test was clear")
        for name, target in sorted(self.targets.items()):
            if name not in self.found:
                continue
            now = await asyncio.to_thread(target.config.read_bytes)
            where = "as found" if now == self.found[name] else "at its last verified state"
            if now != self.verified[name]:
                where = "CHANGED since the autopilot's last write (not by it): left as it is"
            k, table = self.runs(name)
            reason = f"config left {where} ({proposal_words(table or k)})"
            self.record(AuditRecord(outcome="left", instance=name, to_k=k, to_table=table, reason=reason))

    def trial_record(
        self, trial: Trial, outcome: audit.Outcome, verdict: Judgement | None, why: str
    ) -> AuditRecord:
        record = AuditRecord(
            outcome=outcome,
            instance=trial.target.name,
            trigger=trial.trigger,
            from_k=trial.from_k,
            to_k=trial.to_k,
            to_table=trial.to_table,
            diff=trial.diff,
            predicted=trial.predicted,
            before=figure(trial.theirs),
            after=figure(trial.mine),
            reason=why,
        )
        if verdict is not None:
            record.verdict, record.gain, record.sureness = verdict.verdict, verdict.gain, verdict.sureness
            record.gain_low, record.gain_high = verdict.low, verdict.high
        return record

    def record(self, record: AuditRecord) -> None:
        audit.append(self.audit_path, record)
        if record.outcome != "started":
            self.say(record.line())

    def once(self, line: str, key: str | None = None) -> bool:
        """Say a line unless one of the same `key` (default: the line) was said already."""
        key = line if key is None else key
        if key in self._said:
            return False
        self._said.add(key)
        self.say(line)
        return True


async def pilot_endpoints(
    endpoints: list[EndpointSettings],
    client: httpx.AsyncClient,
    kept: KeptModels,
    limits: Limits,
    *,
    audit_path: Path,
    on_state: Callable[[dict[str, PilotState]], None],
    say: Callable[[str], None],
) -> None:
    """The dashboard's mode: one autopilot per endpoint that has a config file and a restart command, acting
    where its `autopilot` setting is "auto", a dry run where "propose" (each its own server: its figures
    are compared with its own before, not with the others')."""
    pilots = []
    for endpoint in endpoints:
        if endpoint.autopilot == "off":
            continue
        if endpoint.config_file is None or not endpoint.restart_command:
            say(f"{endpoint.name}: left alone: the autopilot needs its config_file and restart_command")
            continue
        target = Target(
            endpoint.name, endpoint.config_file, endpoint.restart_command, endpoint.url,
            endpoint.health_timeout_s or HEALTH_TIMEOUT_S,
        )  # fmt: skip
        eyes = ServerEyes(endpoint.name, endpoint.resolved_metrics_url, client)
        pilot = Autopilot(
            {endpoint.name: target}, eyes, kept, limits, auto=endpoint.autopilot == "auto",
            audit_path=audit_path, client=client, say=say, on_state=on_state,
            to_act=f'autopilot = "auto" for {endpoint.name} in spectop.toml to act',
        )  # fmt: skip
        pilots.append(pilot)
    async with asyncio.TaskGroup() as group:  # cancelled, it waits until each has put its file back (gather
        for pilot in pilots:  # would return at the first one done)
            group.create_task(pilot.run())
