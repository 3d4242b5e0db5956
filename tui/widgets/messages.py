"""Typed messages from background work (workers, timers) to widgets, grouped by feature; the one handler
for failed workers (a toast and the debug log, never the app down), and the notes of the editor's recovery
copies printed after the app ends."""

from __future__ import annotations

import logging
import sys
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App
from textual.message import Message
from textual.worker import Worker, WorkerState

from tui.sanitize import safe_line, safe_text

if TYPE_CHECKING:
    from tui.board import LogEntry

log = logging.getLogger(__name__)


class HasApp(Protocol):
    @property
    def app(self) -> App[Any]: ...


class ReportsWorkerFailures:
    """Mixin for a Textual App, Screen or Widget that starts workers."""

    def on_worker_state_changed(self: HasApp, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR:
            return
        name = event.worker.name or "background task"
        error = event.worker.error
        if isinstance(error, BaseException):
            log.error("%s failed", name, exc_info=(type(error), error, error.__traceback__))
        self.app.notify(safe_text(f"{name} failed: {error}"), severity="error", timeout=10, markup=False)


class KeepsRecoveryNotes:
    """Mixin for a Textual App: where each failing editor saved its unsaved text."""

    recovery_notes: tuple[str, ...] = ()

    def keep_recovery_note(self, note: str) -> None:
        self.recovery_notes = (*self.recovery_notes, note)


def print_recovery_notes(app: KeepsRecoveryNotes) -> None:
    for note in app.recovery_notes:
        print(safe_line(note), file=sys.stderr)  # it names the file: any character but / and NUL


# --- dashboard / telemetry -------------------------------------------------------------------------------


@dataclass
class EndpointUpdated(Message):
    """The board's state for `endpoint` changed; `immediate`: redraw now, not batched."""

    endpoint: str
    log_line: LogEntry | None = None
    _: KW_ONLY
    immediate: bool = False


@dataclass
class EndpointsUpdated(Message):
    """The board's state of several endpoints changed, in one message (a fleet refresh is one, not 1,000)."""

    endpoints: tuple[str, ...]
    _: KW_ONLY
    immediate: bool = False


@dataclass
class AutopilotUpdated(Message):
    """The dashboard's autopilot: each endpoint's line (`PilotState.line()`); empty once it is turned off."""

    lines: dict[str, str]


# --- config editor ---------------------------------------------------------------------------------------


@dataclass
class ConfigFieldEdited(Message):
    """A config form field changed; `commit` False while typing (validate only)."""

    path: tuple[str, ...]
    value: str | bool | None
    commit: bool = True


@dataclass
class RestartOutput(Message):
    """One line printed by the endpoint's restart command."""

    line: str


@dataclass
class RestartStarted(Message):
    """A planned restart (the config editor's save & restart) begins; its server answers at `health_url`."""

    health_url: str | None


@dataclass
class RestartExited(Message):
    """The restart command ended; `returncode` is None when it could not be started."""

    returncode: int | None
    detail: str = ""


@dataclass
class HealthChecked(Message):
    """One poll of the server's /health after a restart; `back` once it answers 2xx."""

    back: bool
    detail: str
    elapsed_s: float


# --- bursts (A/B bench) ----------------------------------------------------------------------------------


@dataclass
class BurstProgressed(Message):
    """A burst moved on: `progress` is a tui.bench.engine.BurstProgress."""

    progress: object


@dataclass
class BurstFinished(Message):
    """A burst (or a comparison of past bursts) is done; `summary` is a tui.bench.report.BurstSummary,
    `result` a tui.bench.session.BurstOutcome."""

    summary: object
    result: object | None
    saved_to: str | None


@dataclass
class BurstFailed(Message):
    """A burst could not start or stopped; `error` says why in one line."""

    error: str
    cancelled: bool = False


@dataclass
class BurstHistoryLoaded(Message):
    """The list of past bursts (tui.bench.burst_store.BurstEntry, newest first)."""

    entries: list[object]
