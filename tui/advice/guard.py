"""The fallback guard (the article's `acceptance_threshold`): plain decoding when acceptance stays low.
`decide` is pure; `switch_speculation_off` changes and verifies as `spectop tune` does."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import httpx

from tui.advice.live import Advised, TableOffer  # made by the dashboard (must not import the guard early)
from tui.configs.document import ConfigDocument
from tui.configs.editing import masked_diff, open_config_async, unified_diff
from tui.configs.errors import ConfigError
from tui.configs.spec_table import table_text
from tui.format import fmt_duration, fmt_rate
from tui.settings import EndpointSettings
from tui.tune.plan import TunePlanError, default_key, edited, edited_table, file_table
from tui.tune.runner import Changer

GuardMode = Literal["off", "ask", "auto"]
GuardAction = Literal["offer", "switch_off", "offer_k", "offer_table"]
DEFAULT_COOLDOWN_S = 600.0


@dataclass(frozen=True)
class GuardInput:
    """What the guard looks at, for one endpoint at one moment."""

    mode: GuardMode
    now: float  # Unix seconds
    acceptance_alert_active: bool  # the sustained acceptance alert (warning or critical) is on
    acceptance: float | None  # the current acceptance rate (None: unknown)
    threshold: float
    low_since: float | None  # when acceptance went below the threshold
    speculation_on: bool | None  # from the config file; None: unknown
    can_change: bool  # a config file and a restart command are set
    restarting: bool = False
    last_action_at: float | None = None  # the last guard action (offer answered or switch done)
    cooldown_s: float = DEFAULT_COOLDOWN_S
    editing: bool = False  # the endpoint's config is open in the editor or a tune sweep
    advised: Advised = field(default_factory=Advised)  # the advisor's better k (offered in ask mode only)
    table_offer: TableOffer | None = None  # a k by batch size where one k does not fit all loads (ask mode)


@dataclass(frozen=True)
class GuardDecision:
    action: GuardAction | None
    reason: str  # why (also when there is no action), for the log and the screen
    k: int | None = None  # `offer_k`: the k offered (0 or None: speculation off)
    table: list[list[int]] | None = None  # `offer_table`: vLLM's num_speculative_tokens_per_batch_size


def decide(state: GuardInput) -> GuardDecision:
    """`offer` / `switch_off` on the sustained low-acceptance alert; else (ask mode) `offer_k` / a table."""
    if state.mode == "off":
        return GuardDecision(None, "guard off")
    if not state.acceptance_alert_active:
        return _decide_k(state)
    if state.mode == "ask" and state.advised.now_k:  # a smaller remedy than switching off: the advised k
        # acceptance has been low for `sustained_s`: the remedy is the one this window advises
        offer = _decide_k(replace(state, advised=replace(state.advised, held_k=state.advised.now_k)))
        if offer.action is not None:
            low = f"acceptance {fmt_rate(state.acceptance)} below {fmt_rate(state.threshold)}"
            return replace(offer, reason=f"{low}; {offer.reason}")
    if state.speculation_on is False:
        return GuardDecision(None, "speculation is already off")
    if not state.can_change:
        return GuardDecision(
            None, "no config file or restart command: the guard cannot switch speculation off"
        )
    held = _held_back(state)
    if held is not None:
        return held
    acceptance = fmt_rate(state.acceptance)
    since = "" if state.low_since is None else f" for {fmt_duration(state.now - state.low_since)}"
    reason = f"acceptance {acceptance} below {fmt_rate(state.threshold)}{since}"
    return GuardDecision("offer" if state.mode == "ask" else "switch_off", reason)


def _held_back(state: GuardInput) -> GuardDecision | None:
    """No action during a restart, while the user is at the config, or within the cool-down."""
    if state.restarting:
        return GuardDecision(None, "a restart is under way")
    if state.editing:
        return GuardDecision(None, "the config is open in the editor or a tune")
    if state.last_action_at is not None and state.now - state.last_action_at < state.cooldown_s:
        left = state.cooldown_s - (state.now - state.last_action_at)
        return GuardDecision(None, f"cool-down: {fmt_duration(left)} left")
    return None


def _decide_k(state: GuardInput) -> GuardDecision:
    """Ask mode only: offer the advisor's held better k, else its k by batch size."""
    k, offer = state.advised.held_k, state.table_offer
    if k is None and offer is None:
        return GuardDecision(None, "acceptance is not low for long enough")
    what, change = (
        ("a better k", "change k") if k is not None else ("a k-by-batch-size table", "write a table")
    )
    if state.mode != "ask":
        return GuardDecision(None, f"the guard offers {what} in ask mode only")
    if state.speculation_on is False:
        return GuardDecision(None, "speculation is off")
    if k is not None and state.advised.current_k == k:
        return GuardDecision(None, f"the file already has k={k}")
    if not state.can_change:
        return GuardDecision(None, f"no config file or restart command: the guard cannot {change}")
    held = _held_back(state)
    if held is not None:
        return held
    if offer is not None and k is None:
        return GuardDecision(
            "offer_table", f"one k does not fit every load: {offer.words}", table=offer.table
        )
    return GuardDecision("offer_k", state.advised.words or f"k={k} would be faster", k)


# A guard action as the alerts list, the notification and the recording's message say it (the recording's
# `action` field keeps the name): switching speculation off, or (`K_ACTION_WORDS`) setting k.
ACTION_WORDS = {
    "offered": "offered to switch speculation off",
    "declined": "declined, speculation stays on",
    "switched_off": "switched speculation off",
    "failed": "could not switch speculation off",
}
TABLE_ACTION_WORDS = {
    "offered": "offered k by batch size ({table})",
    "declined": "offer of k by batch size declined ({table})",
    "table_set": "set k by batch size ({table})",
    "failed": "could not set k by batch size ({table})",
}
K_ACTION_WORDS = {
    "offered": "offered k={k}{was}",
    "declined": "offer of k={k} declined{stays}",
    "k_changed": "set k={k}{was}",
    "failed": "could not set k={k}",
}


@dataclass(frozen=True)
class GuardRecord:
    """One guard action as logged: when, the figures, what was done and the diff."""

    endpoint: str
    time: float
    action: str  # "offered" | "declined" | "switched_off" | "k_changed" | "table_set" | "failed"
    reason: str
    acceptance: float | None
    threshold: float
    diff: str = ""
    detail: str = ""
    k: int | None = None  # the k offered or set; None: speculation off
    was_k: int | None = None  # the file's k before (None: not known)
    table: list[list[int]] | None = None  # the k-by-batch-size table offered or set

    def words(self) -> str:
        """The action: "offered to switch speculation off", "offered k=1 (was 2)", "set k by batch size …"."""
        if self.table:
            shown = table_text([(lo, hi, k) for lo, hi, k in self.table])
            return TABLE_ACTION_WORDS.get(self.action, self.action).format(table=shown)
        if not self.k:
            return ACTION_WORDS.get(self.action, self.action)
        known = self.was_k is not None
        was, stays = (f" (was {self.was_k})", f", k stays {self.was_k}") if known else ("", "")
        return K_ACTION_WORDS.get(self.action, self.action).format(k=self.k, was=was, stays=stays)

    def line(self) -> str:
        """What happened in words ("guard switched speculation off: acceptance 28% below 50% …")."""
        text = f"guard {self.words()}: {self.reason}"
        return text + (f" ({self.detail})" if self.detail else "")


def guard_text(doc: ConfigDocument, k: int | None, table: list[list[int]] | None = None) -> str:
    """The guard's edit: speculation off (k None or 0), `k`, or a vLLM table; ConfigError / TunePlanError."""
    key = default_key(doc)
    if table:
        if key.style != "vllm":
            raise TunePlanError("only a vLLM config takes a k-by-batch-size table")
        return edited_table(doc, table).text
    if key.style == "plain":
        change = "change k" if k else "switch speculation off"
        raise TunePlanError(f"the guard needs a vLLM-style or SGLang config to {change}")
    return edited(doc, key, k or 0, doc).text


def file_k(doc: ConfigDocument) -> int | None:
    """The file's draft tokens per step (0: speculation off; None when it cannot tell)."""
    try:
        return default_key(doc).current(doc)
    except (TunePlanError, ConfigError):
        return None


@dataclass(frozen=True)
class Prepared:
    """What the config file says: its k (0: off; None: cannot tell) and the guard's change to it."""

    diff: str = ""
    problem: str = ""  # why there is no diff (the file does not parse, no speculative key)
    k: int | None = None
    has_table: bool = False  # the file already runs the k-by-batch-size table asked about
    text: str = ""  # the file as the guard writes it

    @property
    def speculation_on(self) -> bool | None:
        return None if self.k is None else self.k > 0


async def prepare(
    endpoint: EndpointSettings, k: int | None = None, table: list[list[int]] | None = None
) -> Prepared:
    """The guard's change to the file (off, `k`, or a table) with its masked diff, read off the loop."""
    if endpoint.config_file is None:
        return Prepared(problem="no config file")
    try:
        opened = await open_config_async(endpoint.config_file)
    except ConfigError as error:
        return Prepared(problem=str(error))
    if opened.document is None:
        return Prepared(problem=f"{endpoint.config_file} does not parse: {opened.syntax_error}")
    now = file_k(opened.document)
    has_table = bool(table) and file_table(opened.document) == table
    try:
        text = guard_text(opened.document, k, table)
    except (ConfigError, TunePlanError) as error:
        return Prepared(problem=str(error), k=now, has_table=has_table)
    diff = masked_diff(unified_diff(opened.text, text, endpoint.config_file.name))
    return Prepared(diff, k=now, has_table=has_table, text=text)


def guard_record(
    state: GuardInput,
    name: str,
    action: str,
    decision: GuardDecision,
    prepared: Prepared,
    detail: str | None = None,
) -> GuardRecord:
    """The record of one action on the prepared change (`detail`: the prepared problem unless given)."""
    return GuardRecord(
        name,
        state.now,
        action,
        decision.reason,
        state.acceptance,
        state.threshold,
        prepared.diff,
        prepared.problem if detail is None else detail,
        decision.k,
        prepared.k,
        decision.table,
    )


async def switch_speculation_off(
    endpoint: EndpointSettings, client: httpx.AsyncClient, decision: GuardDecision, state: GuardInput
) -> GuardRecord:
    """Write the guard's change, restart, wait for /health: the record says what was done or why not."""
    prepared = Prepared()

    def record(action: str, detail: str = "") -> GuardRecord:
        return guard_record(state, endpoint.name, action, decision, prepared, detail)

    if endpoint.config_file is None or not endpoint.restart_command:
        return record("failed", "no config file or restart command")
    prepared = await prepare(endpoint, decision.k, decision.table)
    if prepared.problem:
        return record("failed", prepared.problem)
    changer = Changer(
        endpoint.config_file,
        endpoint.restart_command,
        client,
        health_url=endpoint.url + "/health",
        metrics_url=endpoint.resolved_metrics_url,
        log_file=endpoint.log_file,
        health_timeout_s=endpoint.health_timeout_s or 60.0,
    )
    change = await changer.write_and_restart(prepared.text.encode("utf-8"))
    if not change.ok:
        return record("failed", change.reason or "the server did not come back")
    if decision.table:
        return record("table_set", "k by batch size; the server is back")
    if decision.k:
        return record("k_changed", f"k={decision.k}; the server is back")
    return record("switched_off", "speculation off; the server is back")
