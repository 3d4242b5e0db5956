"""Alert rules: plain logic over readings and log events, no UI.

Rules (per endpoint):
- acceptance below the endpoint's threshold for `sustained_s` → warning;
- acceptance below `acceptance_critical` for `sustained_s` → critical (drafting now slows the server down);
- endpoint down (a failed scrape) → critical, clears on the next good scrape;
- OOM or engine error in the log → critical; a traceback → warning. A log alert clears when the
  endpoint is seen up again after being down (a restart), or after `log_hold_s` without a new one.

Unknown acceptance (None: idle, or speculative decoding off) is not "low": it ends the condition.
Every alert keeps its start time and, once over, its clear time. Times are Unix seconds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from tui.telemetry.events import ErrorEvent

AlertKind = Literal["acceptance_low", "acceptance_critical", "down", "oom", "engine_error", "log_error"]
Severity = Literal["warning", "critical"]

MAX_CLEARED_ALERTS = 500
LOG_ALERT_KINDS: dict[str, tuple[AlertKind, Severity, str]] = {
    "oom": ("oom", "critical", "out of memory in the log"),
    "engine_dead": ("engine_error", "critical", "engine error in the log"),
    "traceback": ("log_error", "warning", "traceback in the log"),
}


@dataclass
class Alert:
    endpoint: str
    kind: AlertKind
    severity: Severity
    message: str
    started_at: float
    cleared_at: float | None = None

    @property
    def active(self) -> bool:
        return self.cleared_at is None


@dataclass(frozen=True)
class AlertRules:
    acceptance_warning: float = 0.6
    acceptance_critical: float = 0.3
    sustained_s: float = 30.0
    log_hold_s: float = 300.0


@dataclass
class _EndpointState:
    threshold: float
    low_since: float | None = None
    critical_since: float | None = None
    was_down: bool = False
    last_log_error: float | None = None
    active: dict[AlertKind, Alert] = field(default_factory=dict)


class AlertEngine:
    """Feed it readings and log events; it keeps the active alerts and a bounded list of cleared ones."""

    def __init__(self, rules: AlertRules | None = None) -> None:
        self.rules = rules or AlertRules()
        self._endpoints: dict[str, _EndpointState] = {}
        self.cleared: deque[Alert] = deque(maxlen=MAX_CLEARED_ALERTS)

    def set_threshold(self, endpoint: str, threshold: float | None) -> None:
        """The warning threshold of one endpoint (from its config file); None → the rules' default."""
        self._state(endpoint).threshold = (
            threshold if threshold is not None else self.rules.acceptance_warning
        )

    def threshold(self, endpoint: str) -> float:
        return self._state(endpoint).threshold

    def active(self, endpoint: str | None = None) -> list[Alert]:
        states = [self._state(endpoint)] if endpoint is not None else list(self._endpoints.values())
        alerts = [alert for state in states for alert in state.active.values()]
        return sorted(alerts, key=lambda alert: alert.started_at)

    def all_alerts(self) -> list[Alert]:
        """Active alerts first (newest first), then cleared ones (newest first)."""
        active = sorted(self.active(), key=lambda alert: alert.started_at, reverse=True)
        return active + sorted(self.cleared, key=lambda alert: alert.started_at, reverse=True)

    def observe_reading(
        self, endpoint: str, time: float, up: bool, acceptance_rate: float | None
    ) -> list[Alert]:
        """Apply one scrape; returns the alerts that started or cleared because of it."""
        state = self._state(endpoint)
        changed: list[Alert] = []
        if not up:
            changed += self._raise(state, endpoint, "down", "critical", "endpoint down", time)
            state.was_down = True
            state.low_since = state.critical_since = None
            changed += self._clear(state, ("acceptance_low", "acceptance_critical"), time)
            return changed
        changed += self._clear(state, ("down",), time)
        if state.last_log_error is not None and (
            state.was_down or time - state.last_log_error >= self.rules.log_hold_s
        ):
            state.last_log_error = None
            changed += self._clear(state, ("oom", "engine_error", "log_error"), time)
        state.was_down = False
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

    def _acceptance(
        self, state: _EndpointState, endpoint: str, time: float, rate: float | None
    ) -> list[Alert]:
        changed: list[Alert] = []
        sustained = self.rules.sustained_s
        if rate is None or rate >= state.threshold:
            state.low_since = None
            changed += self._clear(state, ("acceptance_low",), time)
        else:
            state.low_since = state.low_since if state.low_since is not None else time
            if time - state.low_since >= sustained:
                message = f"acceptance {rate:.2f} below {state.threshold:.2f}"
                changed += self._raise(state, endpoint, "acceptance_low", "warning", message, state.low_since)
        if rate is None or rate >= self.rules.acceptance_critical:
            state.critical_since = None
            changed += self._clear(state, ("acceptance_critical",), time)
        else:
            state.critical_since = state.critical_since if state.critical_since is not None else time
            if time - state.critical_since >= sustained:
                message = f"acceptance {rate:.2f} below {self.rules.acceptance_critical:.2f}: drafting slows"
                changed += self._raise(
                    state, endpoint, "acceptance_critical", "critical", message, state.critical_since
                )
        return changed

    def _raise(
        self,
        state: _EndpointState,
        endpoint: str,
        kind: AlertKind,
        severity: Severity,
        message: str,
        started_at: float,
    ) -> list[Alert]:
        if kind in state.active:
            return []
        alert = Alert(endpoint, kind, severity, message, started_at)
        state.active[kind] = alert
        return [alert]

    def _clear(self, state: _EndpointState, kinds: tuple[AlertKind, ...], time: float) -> list[Alert]:
        changed = []
        for kind in kinds:
            alert = state.active.pop(kind, None)
            if alert is not None:
                alert.cleared_at = time
                self.cleared.append(alert)
                changed.append(alert)
        return changed

    def _state(self, endpoint: str) -> _EndpointState:
        state = self._endpoints.get(endpoint)
        if state is None:
            state = self._endpoints[endpoint] = _EndpointState(threshold=self.rules.acceptance_warning)
        return state
