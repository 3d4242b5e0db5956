"""The fallback guard in the running app, without the UI: per-endpoint state and the controller.
`watch` takes a cheap first look, reads the config file in a task (`prepare`), decides again, then offers
or acts; while an offer, a check or a switch is under way the endpoint is busy."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any, Literal, Protocol

import httpx

from tui.advice.guard import (
    Advised,
    GuardDecision,
    GuardInput,
    GuardRecord,
    Prepared,
    decide,
    guard_record,
    prepare,
    switch_speculation_off,
)
from tui.advice.live import AdviceBook, TableOffer
from tui.settings import EndpointSettings
from tui.telemetry.alerts import AlertEngine
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import GuardLogRecord

ACCEPTANCE_KINDS = ("acceptance_low", "acceptance_critical")
Busy = Literal["checking", "offered", "switching"]


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
    """The guard's view of one endpoint: the alert engine, its latest reading and (ask mode) the advice."""
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

    def free(self, endpoint: EndpointSettings) -> bool:
        """Whether the guard may take a first look: it is on and nothing is under way for the endpoint."""
        return endpoint.guard != "off" and endpoint.name not in self.busy

    def begin(self, name: str, what: Busy) -> None:
        self.busy[name] = what

    def release(self, name: str) -> None:
        """The check found nothing to do: not busy, no cool-down."""
        self.busy.pop(name, None)

    def acted(self, name: str, now: float) -> None:
        """An offer answered or a switch over (done or failed): not busy, the cool-down starts."""
        self.busy.pop(name, None)
        self.last_action_at[name] = now


def log_record(record: GuardRecord) -> GuardLogRecord:
    """The record as the recording keeps it (its k, was_k and table are not kept)."""
    return GuardLogRecord(**asdict(record), message=record.line())


@dataclass(frozen=True)
class GuardFacts:
    """What the app knows of one endpoint now."""

    restarting: bool = False  # a planned restart (editor, guard) is under way
    editing: bool = False  # the endpoint's config is open in the editor or a tune screen


@dataclass(frozen=True)
class GuardOffer:
    """What the dialog shows: the question, the reason (the figures), the diff, and what yes does."""

    endpoint: str
    k: int | None  # None: switch speculation off; else set k
    reason: str
    diff: str
    table: list[list[int]] | None = None  # set: write this k-by-batch-size table

    @property
    def title(self) -> str:
        if self.table:
            return f"guard · {self.endpoint}: set k by batch size?"
        if self.k is None:
            return f"guard · {self.endpoint}: switch speculative decoding off?"
        return f"guard · {self.endpoint}: set k={self.k}?"

    @property
    def yes(self) -> str:
        if self.table:
            return "write the table"
        return "switch off" if self.k is None else f"set k={self.k}"


class GuardPorts(Protocol):
    """How the controller reaches the app (implemented by the screen side, tui/screens/guard.py)."""

    def facts(self, endpoint: EndpointSettings) -> GuardFacts: ...
    def start(self, work: Coroutine[Any, Any, None], name: str) -> None: ...
    def offer(self, offer: GuardOffer, answered: Callable[[bool | None], None]) -> None: ...
    def tell(self, record: GuardRecord) -> None: ...
    def restart_began(self, health_url: str) -> None: ...
    def restart_ended(self, ok: bool, detail: str) -> None: ...
    def changed(self, name: str) -> None: ...
    async def record(self, record: GuardLogRecord) -> None: ...


class GuardBoard(Protocol):
    """What the guard reads of the dashboard's board (tui/board.py); its actions go in the alerts."""

    @property
    def advice(self) -> AdviceBook | None: ...
    @property
    def alerts(self) -> AlertEngine: ...
    @property
    def readings(self) -> Mapping[str, EndpointReading]: ...
    def endpoint(self, name: str) -> EndpointSettings | None: ...


class GuardController:
    def __init__(
        self,
        board: GuardBoard,
        client: Callable[[], httpx.AsyncClient | None],
        clock: Callable[[], float],
        ports: GuardPorts,
        *,
        enabled: bool = True,
    ) -> None:
        self.board, self.client, self.clock, self.ports = board, client, clock, ports
        self.enabled = enabled  # a replay: nothing to switch
        self.book = GuardBook()

    def _table(self, endpoint: EndpointSettings) -> TableOffer | None:
        """A k by batch size where the advisor's model says one k does not fit every load (ask mode)."""
        book, reading = self.board.advice, self.board.readings.get(endpoint.name)
        if endpoint.guard != "ask" or book is None or reading is None or not reading.up:
            return None
        url = reading.url or endpoint.url
        return book.table_offer(endpoint.name, url, reading.model or endpoint.model, reading.figures)

    def watch(self, names: tuple[str, ...] | list[str]) -> None:
        """After a board change of `names`: start a check for each whose first look calls for action."""
        if not self.enabled or self.client() is None:
            return
        for name in names:
            endpoint = self.board.endpoint(name)
            if endpoint is None or not self.book.free(endpoint):
                continue
            first = decide(self._state(endpoint))  # a cheap first look: speculation assumed on
            if first.action is not None:
                self.book.begin(name, "checking")
                self.ports.start(self._check(endpoint, first), name)

    def _state(self, endpoint: EndpointSettings, speculation_on: bool | None = None) -> GuardInput:
        """The guard's input for `endpoint` now: the board's alerts, reading and advice, the app's facts."""
        facts, now, book = self.ports.facts(endpoint), self.clock(), self.board.advice
        return guard_input(
            endpoint,
            self.board.alerts,
            self.board.readings.get(endpoint.name),
            now=now,
            restarting=facts.restarting,
            speculation_on=speculation_on,
            last_action_at=self.book.last_action_at.get(endpoint.name),
            editing=facts.editing,
            advised=book.sustained_better(endpoint.name, now) if book is not None else None,
            table_offer=self._table(endpoint),
        )

    async def _check(self, endpoint: EndpointSettings, first: GuardDecision) -> None:
        """The second look, with the config file read (is speculation on, the diff), then the action."""
        name = endpoint.name
        prepared = await prepare(endpoint, first.k if first.action == "offer_k" else None, first.table)
        state = self._state(endpoint, prepared.speculation_on)
        decision = decide(state)
        moved = decision.k != first.k or decision.table != first.table
        if decision.action is None or moved or (decision.table and prepared.has_table):
            self.book.release(name)  # nothing to do, or the advice moved while the file was read
        elif decision.action == "switch_off":
            await self._switch(endpoint, state, decision)
        elif prepared.problem:
            self.book.acted(name, state.now)
            self._note(guard_record(state, name, "failed", decision, prepared))
        else:
            self._offer(endpoint, state, decision, prepared)

    def _offer(
        self, endpoint: EndpointSettings, state: GuardInput, decision: GuardDecision, prepared: Prepared
    ) -> None:
        name = endpoint.name
        self.book.begin(name, "offered")
        self._note(guard_record(state, name, "offered", decision, prepared))
        k = (decision.k or None) if decision.action == "offer_k" else None  # k=0: speculation off
        offer = GuardOffer(name, k, decision.reason, prepared.diff, decision.table)
        self.ports.offer(offer, partial(self._answered, endpoint, state, decision, prepared))

    def _answered(
        self,
        endpoint: EndpointSettings,
        state: GuardInput,
        decision: GuardDecision,
        prepared: Prepared,
        yes: bool | None,
    ) -> None:
        now = self.clock()
        if yes:
            self.book.begin(endpoint.name, "switching")
            self.ports.start(self._switch(endpoint, replace(state, now=now), decision), endpoint.name)
            return
        self.book.acted(endpoint.name, now)  # declined: counts for the cool-down
        self._note(guard_record(replace(state, now=now), endpoint.name, "declined", decision, prepared))

    async def _switch(self, endpoint: EndpointSettings, state: GuardInput, decision: GuardDecision) -> None:
        """The change (speculation off, or the offered k), restart, health wait; the card shows it."""
        client = self.client()
        assert client is not None
        self.book.begin(endpoint.name, "switching")
        self.ports.restart_began(f"{endpoint.url}/health")
        try:
            record = await switch_speculation_off(endpoint, client, decision, state)
        except BaseException:
            self.ports.restart_ended(False, "the guard's change was interrupted")
            self.book.acted(endpoint.name, self.clock())
            raise
        self.ports.restart_ended(record.action in ("switched_off", "k_changed", "table_set"), record.detail)
        self.book.acted(endpoint.name, self.clock())
        self._note(record)

    def _note(self, record: GuardRecord) -> None:
        """Every guard action: into the alerts list (with its diff), the recording, and a notification."""
        self.board.alerts.note(record.endpoint, record.time, record.line(), record.diff)
        self.ports.changed(record.endpoint)
        if record.action != "offered":  # an offer is its own dialog
            self.ports.tell(record)
        self.ports.start(self.ports.record(log_record(record)), record.endpoint)
