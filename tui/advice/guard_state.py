"""The fallback guard in the running app: per-endpoint state and the steps around `decide` (no UI).

The app calls `GuardBook.candidate` on every board change of an endpoint whose `guard` is not "off"; a
cheap first `decide` (speculation assumed on) says whether the config file is worth reading. `prepare`
then reads the file off the event loop (is speculation on, and the diff that would switch it off) and
the app asks `decide` again with what the file says. While an offer is open or a check or a switch is
under way the endpoint is `busy` (never two dialogs, never two switches); every answer and every switch
(done or failed) starts the cool-down (`last_action_at`), so a `T` tune or a manual edit that turns
speculation back on lets the guard act again only once the cool-down is over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tui.advice.guard import (
    Advised,
    GuardDecision,
    GuardInput,
    GuardRecord,
    decide,
    file_k,
    guard_text,
)
from tui.advice.guard_table import TableOffer
from tui.configs.editing import masked_diff, open_config_async, unified_diff
from tui.configs.errors import ConfigError
from tui.settings import EndpointSettings
from tui.telemetry.alerts import AlertEngine
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import GuardLogRecord
from tui.tune.plan import VLLM_TABLE, TunePlanError

ACCEPTANCE_KINDS = ("acceptance_low", "acceptance_critical")
Busy = Literal["checking", "offered", "switching"]


@dataclass(frozen=True)
class Prepared:
    """What the config file says: speculation on (None: cannot tell) and the diff that switches it off."""

    speculation_on: bool | None
    diff: str = ""
    problem: str = ""  # why there is no diff (the file does not parse, no speculative key)
    k: int | None = None  # the file's draft tokens per step (0: off; None: cannot tell)
    has_table: bool = False  # the file already runs the k-by-batch-size table asked about


async def prepare(
    endpoint: EndpointSettings, k: int | None = None, table: list[list[int]] | None = None
) -> Prepared:
    """Read the endpoint's config file (off the event loop) for the guard's second look: the diff that
    switches speculation off (k None), that sets `k` draft tokens, or that writes a k-by-batch-size table."""
    if endpoint.config_file is None:
        return Prepared(None, problem="no config file")
    try:
        opened = await open_config_async(endpoint.config_file)
    except ConfigError as error:
        return Prepared(None, problem=str(error))
    if opened.document is None:
        return Prepared(None, problem=f"{endpoint.config_file} does not parse: {opened.syntax_error}")
    now = file_k(opened.document)
    on = None if now is None else now > 0
    has_table = bool(table) and opened.document.has(VLLM_TABLE) and opened.document.get(VLLM_TABLE) == table
    try:
        text = guard_text(opened.document, k, table)
    except (ConfigError, TunePlanError) as error:
        return Prepared(on, problem=str(error), k=now, has_table=has_table)
    diff = masked_diff(unified_diff(opened.text, text, endpoint.config_file.name))
    return Prepared(on, diff, k=now, has_table=has_table)


def guard_input(
    endpoint: EndpointSettings,
    alerts: AlertEngine,
    reading: EndpointReading | None,
    *,
    now: float,
    restarting: bool,
    speculation_on: bool | None = None,
    last_action_at: float | None = None,
    editing: bool = False,
    advised: Advised | None = None,
    table_offer: TableOffer | None = None,
) -> GuardInput:
    """The guard's view of one endpoint from the alert engine and its latest reading. `advised`: what
    the advisor says (its better k), and `table_offer` (a k by batch size), for ask mode."""
    alert = next((a for a in alerts.active(endpoint.name) if a.kind in ACCEPTANCE_KINDS), None)
    acceptance = reading.figures.acceptance_rate if reading is not None and reading.up else None
    return GuardInput(
        mode=endpoint.guard,
        now=now,
        acceptance_alert_active=alert is not None,
        acceptance=acceptance,
        threshold=alerts.threshold(endpoint.name),
        low_since=alert.started_at if alert is not None else None,
        speculation_on=speculation_on,
        can_change=endpoint.config_file is not None and bool(endpoint.restart_command),
        restarting=restarting,
        last_action_at=last_action_at,
        cooldown_s=endpoint.guard_cooldown_s,
        editing=editing,
        advised=advised or Advised(),
        table_offer=table_offer,
    )


@dataclass
class GuardBook:
    """Per endpoint: the last guard action's time and what is under way (a check, an offer, a switch)."""

    last_action_at: dict[str, float] = field(default_factory=dict)
    busy: dict[str, Busy] = field(default_factory=dict)

    def candidate(
        self,
        endpoint: EndpointSettings,
        alerts: AlertEngine,
        reading: EndpointReading | None,
        *,
        now: float,
        restarting: bool,
        editing: bool = False,
        advised: Advised | None = None,
        table_offer: TableOffer | None = None,
    ) -> GuardInput | None:
        """The guard's input when a first look (speculation assumed on) calls for an action; None when
        the guard is off, the endpoint is busy, or nothing is to be done (no file read needed)."""
        if endpoint.guard == "off" or endpoint.name in self.busy:
            return None
        state = guard_input(
            endpoint,
            alerts,
            reading,
            now=now,
            restarting=restarting,
            last_action_at=self.last_action_at.get(endpoint.name),
            editing=editing,
            advised=advised,
            table_offer=table_offer,
        )
        return state if decide(state).action is not None else None

    def begin(self, name: str, what: Busy) -> None:
        self.busy[name] = what

    def release(self, name: str) -> None:
        """The check found nothing to do: not busy, no cool-down."""
        self.busy.pop(name, None)

    def acted(self, name: str, now: float) -> None:
        """An offer answered or a switch over (done or failed): not busy, the cool-down starts."""
        self.busy.pop(name, None)
        self.last_action_at[name] = now


def record_for(
    state: GuardInput, name: str, decision: GuardDecision, action: str, prepared: Prepared, *, now: float
) -> GuardRecord:
    """The record of an action that is not a switch (`switch_speculation_off` makes those): offered,
    declined, or failed before anything was changed (why: `prepared.problem`)."""
    return GuardRecord(
        name,
        now,
        action,
        decision.reason,
        state.acceptance,
        state.threshold,
        prepared.diff,
        prepared.problem,
        decision.k,
        prepared.k,
        decision.table,
    )


def log_record(record: GuardRecord) -> GuardLogRecord:
    """The record as the recording keeps it."""
    return GuardLogRecord(
        endpoint=record.endpoint,
        time=record.time,
        action=record.action,
        reason=record.reason,
        message=record.line(),
        acceptance=record.acceptance,
        threshold=record.threshold,
        diff=record.diff,
        detail=record.detail,
    )
