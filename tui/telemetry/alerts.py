"""Alert rules over readings and log events, no UI: one alert per condition and endpoint, its severity the
worst that holds now and its text following the current figure while active. Times are Unix seconds."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Literal

from tui.format import fmt_length, fmt_rate
from tui.telemetry.events import ErrorEvent

AlertKind = Literal[
    "acceptance_low",
    "acceptance_critical",
    "down",
    "oom",
    "engine_error",
    "log_error",
    "imbalance",
    "gpu_memory_high",
    "source_down",
    "guard",
    "advice",
]
Severity = Literal["warning", "critical"]
ACCEPTANCE: AlertKind = "acceptance_low"  # the key of the one acceptance condition (either kind)

MAX_CLEARED_ALERTS = 500
# Conditions told by their text (fleet imbalance, Prometheus failing, GPU memory high, the advisor's k).
TextKind = Literal["imbalance", "source_down", "gpu_memory_high", "advice"]
TEXT_CONDITIONS: dict[TextKind, Severity] = {
    "imbalance": "warning",
    "source_down": "critical",
    "gpu_memory_high": "warning",
    "advice": "warning",
}
LOG_ALERT_KINDS: dict[str, tuple[AlertKind, Severity, str]] = {
    "oom": ("oom", "critical", "out of memory in the log"),
    "engine_dead": ("engine_error", "critical", "engine error in the log"),
    "traceback": ("log_error", "warning", "traceback in the log"),
}


@dataclass
class Alert:
    """One condition on one endpoint; `kind`, `severity` and `message` describe it as it is now."""

    endpoint: str
    kind: AlertKind
    severity: Severity
    message: str
    started_at: float
    cleared_at: float | None = None
    worst: Severity | None = None  # the worst severity it reached (set on creation)
    diff: str = ""  # a guard action's config diff (kind "guard")

    def __post_init__(self) -> None:
        if self.worst is None:
            self.worst = self.severity

    @property
    def active(self) -> bool:
        return self.cleared_at is None


@dataclass(frozen=True)
class AlertRules:
    acceptance_warning: float = 0.6
    warning_source: str = "default"  # where `acceptance_warning` comes from ("spectop.toml" when set there)
    acceptance_critical: float = 0.3
    sustained_s: float = 30.0
    log_hold_s: float = 300.0
    restart_grace_s: float = 600.0  # a restart never reported as over is "down" after this long
    restart_settle_s: float = 10.0  # after /health answered: how long a not-yet-seen down may still come


@dataclass
class _EndpointState:
    threshold: float
    threshold_source: str  # where the threshold comes from: "config.toml", "spectop.toml", "default"
    low_since: float | None = None
    critical_since: float | None = None
    was_down: bool = False
    last_log_error: float | None = None
    active: dict[AlertKind, Alert] = field(default_factory=dict)
    restart_began: float | None = None  # a planned restart is under way
    restart_back_at: float | None = None  # when its /health answered again
    restart_saw_down: bool = False
    restart_failed: tuple[float, str] | None = None  # when and why the last restart failed
    last_up: bool | None = None
    k: int | None = None  # draft tokens per step (per-position count), when known
    mean_length: float | None = None
    baseline: tuple[int | None, float] | None = None  # (k, mean length) when acceptance was last fine


class AlertEngine:
    """Keeps the active alerts and a bounded list of cleared ones; `version` grows on every visible change."""

    def __init__(self, rules: AlertRules | None = None) -> None:
        self.rules = rules or AlertRules()
        self._endpoints: dict[str, _EndpointState] = {}
        self.cleared: deque[Alert] = deque(maxlen=MAX_CLEARED_ALERTS)
        self.version = 0

    def set_threshold(self, endpoint: str, threshold: float | None, source: str = "") -> None:
        state = self._state(endpoint)
        if threshold is None:
            threshold, source = self.rules.acceptance_warning, self.rules.warning_source
        state.threshold, state.threshold_source = threshold, source

    def threshold(self, endpoint: str) -> float:
        return self._state(endpoint).threshold

    def threshold_source(self, endpoint: str) -> str:
        return self._state(endpoint).threshold_source

    def active(self, endpoint: str | None = None) -> list[Alert]:
        """Copies of the active alerts, oldest first (a card must not see one change before it redraws)."""
        states = [self._state(endpoint)] if endpoint is not None else list(self._endpoints.values())
        alerts = [replace(alert) for state in states for alert in state.active.values()]
        return sorted(alerts, key=lambda alert: alert.started_at)

    def active_severities(self, endpoint: str) -> tuple[str, ...]:
        return tuple(alert.severity for alert in self._state(endpoint).active.values())

    def active_count(self) -> int:
        return sum(len(state.active) for state in self._endpoints.values())

    def all_alerts(self) -> list[Alert]:
        """Active alerts first (newest first), then cleared ones (newest first)."""
        active = sorted(self.active(), key=lambda alert: alert.started_at, reverse=True)
        return active + sorted(self.cleared, key=lambda alert: alert.started_at, reverse=True)

    def restarting(self, endpoint: str) -> bool:
        return self._state(endpoint).restart_began is not None

    def begin_restart(self, endpoint: str, time: float) -> None:
        """A planned restart starts: failed scrapes until `end_restart` raise nothing."""
        state = self._state(endpoint)
        state.restart_began, state.restart_back_at, state.restart_saw_down = time, None, False
        self.version += 1

    def end_restart(self, endpoint: str, time: float, ok: bool, detail: str = "") -> list[Alert]:
        """The restart and health wait are over (`ok`: /health answered); failed and down: "down" at once."""
        state = self._state(endpoint)
        if state.restart_began is None:
            return []
        if ok:
            state.restart_back_at = time
            if state.restart_saw_down and state.last_up:
                self._restart_over(state)
            return []
        self._restart_over(state)
        state.restart_failed = (time, detail)
        if state.last_up is not False:
            return []  # the next failed scrape says why (see `_down_message`)
        return self._raise(state, endpoint, "down", "critical", self._down_message(state, time), time)

    def _down_message(self, state: _EndpointState, time: float) -> str:
        failed = state.restart_failed
        if failed is None or time - failed[0] > self.rules.restart_settle_s:
            return "endpoint down"
        message = "endpoint down: restart failed"
        return f"{message} ({failed[1]})"[:200] if failed[1] else message

    def _restart_over(self, state: _EndpointState) -> None:
        state.restart_began = state.restart_back_at = None
        state.restart_saw_down = False
        self.version += 1

    def observe_reading(
        self,
        endpoint: str,
        time: float,
        up: bool,
        acceptance_rate: float | None,
        mean_length: float | None = None,
        k: int | None = None,
    ) -> list[Alert]:
        """One scrape: the alerts that started, cleared or became critical (`k`, `mean_length`: the text)."""
        state = self._state(endpoint)
        state.last_up = up
        changed: list[Alert] = []
        if not up:
            state.was_down = True
            state.low_since = state.critical_since = None
            changed += self._clear(state, (ACCEPTANCE,), time)
            began = state.restart_began
            if began is not None and time - began < self.rules.restart_grace_s:
                state.restart_saw_down = True
                return changed  # planned: "restarting", not "down"
            if began is not None:
                self._restart_over(state)
            message = self._down_message(state, time)
            return changed + self._raise(state, endpoint, "down", "critical", message, time)
        state.restart_failed = None
        back = state.restart_back_at
        if back is not None and (state.restart_saw_down or time - back >= self.rules.restart_settle_s):
            self._restart_over(state)  # back after being seen down, or up all along since /health answered
        changed += self._clear(state, ("down",), time)
        if state.last_log_error is not None and (
            state.was_down or time - state.last_log_error >= self.rules.log_hold_s
        ):
            state.last_log_error = None
            changed += self._clear(state, ("oom", "engine_error", "log_error"), time)
        state.was_down = False
        if k is not None:
            state.k = k
        if mean_length is not None:
            state.mean_length = mean_length
        changed += self._acceptance(state, endpoint, time, acceptance_rate)
        return changed

    def observe_log_event(self, endpoint: str, time: float, event: object) -> list[Alert]:
        if not isinstance(event, ErrorEvent) or event.category not in LOG_ALERT_KINDS:
            return []
        kind, severity, message = LOG_ALERT_KINDS[event.category]
        state = self._state(endpoint)
        state.last_log_error = time
        detail = f"{message}: {event.message}" if event.message else message
        return self._raise(state, endpoint, kind, severity, detail[:200], time)

    def observe_condition(
        self, endpoint: str, kind: TextKind, time: float, message: str | None
    ) -> list[Alert]:
        """A condition told by its text (`TEXT_CONDITIONS`): raised with `message`, cleared by None."""
        state = self._state(endpoint)
        if message is None:
            return self._clear(state, (kind,), time)
        alert = state.active.get(kind)
        if alert is None:
            return self._raise(state, endpoint, kind, TEXT_CONDITIONS[kind], message[:200], time)
        if alert.message != message[:200]:
            alert.message = message[:200]
            self.version += 1
        return []

    def note(self, endpoint: str, time: float, message: str, diff: str = "") -> Alert:
        """An event for the alerts list (a guard action), kept with the cleared ones."""
        alert = Alert(endpoint, "guard", "warning", message[:300], time, cleared_at=time, diff=diff)
        self.cleared.append(alert)
        self.version += 1
        return alert

    def _acceptance(
        self, state: _EndpointState, endpoint: str, time: float, rate: float | None
    ) -> list[Alert]:
        if rate is None or rate >= state.threshold:
            state.low_since = state.critical_since = None
            if rate is not None and state.mean_length is not None:
                state.baseline = (state.k, state.mean_length)
            return self._clear(state, (ACCEPTANCE,), time)
        if state.low_since is None:
            state.low_since = time
        if rate >= self.rules.acceptance_critical:
            state.critical_since = None
        elif state.critical_since is None:
            state.critical_since = time
        sustained = self.rules.sustained_s
        severity: Severity | None = None
        if state.critical_since is not None and time - state.critical_since >= sustained:
            severity = "critical"
        elif time - state.low_since >= sustained:
            severity = "warning"
        alert = state.active.get(ACCEPTANCE)
        if severity is None:
            if alert is None:
                return []
            severity = "warning"  # back above critical, not yet for `sustained_s` under it again
        kind: AlertKind = "acceptance_critical" if severity == "critical" else "acceptance_low"
        message = self._acceptance_text(state, rate, severity)
        if alert is None:
            return self._raise(state, endpoint, ACCEPTANCE, severity, message, state.low_since, kind)
        escalated = severity == "critical" and alert.severity != "critical"
        if (alert.kind, alert.severity, alert.message) != (kind, severity, message):
            alert.kind, alert.severity, alert.message = kind, severity, message
            if severity == "critical":
                alert.worst = "critical"
            self.version += 1
        return [alert] if escalated else []

    def _acceptance_text(self, state: _EndpointState, rate: float, severity: Severity) -> str:
        """`acceptance 54% below 60%; k 2→4: mean length 2.53→3.15, up (more tokens per step)`."""
        limit = self.rules.acceptance_critical if severity == "critical" else state.threshold
        text = f"acceptance {fmt_rate(rate)} below {fmt_rate(limit)}"
        mean = state.mean_length
        if mean is None:
            return text + (": drafting slows" if severity == "critical" else "")
        baseline = state.baseline
        if baseline is None:
            context, rose = f"mean length {fmt_length(mean)}", False
        else:
            old_k, old_mean = baseline
            rose = mean > old_mean + 0.005
            trend = "up (more tokens per step)" if rose else "down" if mean < old_mean - 0.005 else "flat"
            context = f"mean length {fmt_length(old_mean)}→{fmt_length(mean)}, {trend}"
            if old_k is not None and state.k is not None and old_k != state.k:
                context = f"k {old_k}→{state.k}: {context}"
        if severity == "critical" and not rose:
            text += ": drafting slows"
        return f"{text}; {context}"

    def _raise(
        self,
        state: _EndpointState,
        endpoint: str,
        key: AlertKind,
        severity: Severity,
        message: str,
        started_at: float,
        kind: AlertKind | None = None,
    ) -> list[Alert]:
        if key in state.active:
            return []
        alert = Alert(endpoint, kind or key, severity, message, started_at)
        state.active[key] = alert
        self.version += 1
        return [alert]

    def _clear(self, state: _EndpointState, kinds: tuple[AlertKind, ...], time: float) -> list[Alert]:
        changed = [alert for kind in kinds if (alert := state.active.pop(kind, None)) is not None]
        for alert in changed:
            alert.cleared_at = time
        self.cleared.extend(changed)
        self.version += len(changed)
        return changed

    def _state(self, endpoint: str) -> _EndpointState:
        if endpoint not in self._endpoints:
            rules = self.rules
            self._endpoints[endpoint] = _EndpointState(rules.acceptance_warning, rules.warning_source)
        return self._endpoints[endpoint]
