"""Typed messages from background work (workers, timers) to widgets, grouped by feature; the one handler
for failed workers (a toast and the debug log, never the app down), and the notes of the editor's recovery
copies printed after the app ends."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App
from textual.message import Message
from textual.worker import Worker, WorkerState

from tui.sanitize import safe_line, safe_text

if TYPE_CHECKING:
    from tui.board import LogEntry

log = logging.getLogger(__name__)


def report_worker_failure(app: App[Any], worker: Worker[Any]) -> None:
    name = worker.name or "background task"
    error = worker.error
    if isinstance(error, BaseException):
        log.error("%s failed", name, exc_info=(type(error), error, error.__traceback__))
    app.notify(safe_text(f"{name} failed: {error}"), severity="error", timeout=10, markup=False)


class HasApp(Protocol):
    """A Textual App, Screen or Widget: each knows its app."""

    @property
    def app(self) -> App[Any]: ...


class ReportsWorkerFailures:
    """Mixin for a Textual App, Screen or Widget that starts workers."""

    def on_worker_state_changed(self: HasApp, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            report_worker_failure(self.app, event.worker)


class KeepsRecoveryNotes:
    """Mixin for a Textual App: where each failing editor saved its unsaved text."""

    recovery_notes: tuple[str, ...] = ()

    def keep_recovery_note(self, note: str) -> None:
        self.recovery_notes = (*self.recovery_notes, note)


def print_recovery_notes(app: KeepsRecoveryNotes) -> None:
    for note in app.recovery_notes:
        print(safe_line(note), file=sys.stderr)  # it names the file: any character but / and NUL


# --- dashboard / telemetry -------------------------------------------------------------------------------


class EndpointUpdated(Message):
    """The board's state for `endpoint` changed; `immediate`: redraw now, not batched."""

    def __init__(self, endpoint: str, log_line: LogEntry | None = None, *, immediate: bool = False) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.log_line = log_line
        self.immediate = immediate


class EndpointsUpdated(Message):
    """The board's state of several endpoints changed, in one message (a fleet refresh is one, not 1,000)."""

    def __init__(self, endpoints: tuple[str, ...], *, immediate: bool = False) -> None:
        super().__init__()
        self.endpoints = endpoints
        self.immediate = immediate


class AutopilotUpdated(Message):
    """The dashboard's autopilot: each endpoint's line (`PilotState.line()`); empty once it is turned off."""

    def __init__(self, lines: dict[str, str]) -> None:
        super().__init__()
        self.lines = lines


# --- config editor ---------------------------------------------------------------------------------------


class ConfigFieldEdited(Message):
    """A config form field changed; `commit` False while typing (validate only)."""

    def __init__(self, path: tuple[str, ...], value: str | bool | None, commit: bool = True) -> None:
        super().__init__()
        self.path = path
        self.value = value
        self.commit = commit


class RestartOutput(Message):
    """One line printed by the endpoint's restart command."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self.line = line


class RestartStarted(Message):
    """A planned restart (the config editor's save & restart) begins; its server answers at `health_url`."""

    def __init__(self, health_url: str | None) -> None:
        super().__init__()
        self.health_url = health_url


class RestartExited(Message):
    """The restart command ended; `returncode` is None when it could not be started."""

    def __init__(self, returncode: int | None, detail: str = "") -> None:
        super().__init__()
        self.returncode = returncode
        self.detail = detail


class HealthChecked(Message):
    """One poll of the server's /health after a restart; `back` once it answers 2xx."""

    def __init__(self, back: bool, detail: str, elapsed_s: float) -> None:
        super().__init__()
        self.back = back
        self.detail = detail
        self.elapsed_s = elapsed_s


# --- bursts (A/B bench) ----------------------------------------------------------------------------------


class BurstProgressed(Message):
    """A burst moved on: `progress` is a tui.bench.engine.BurstProgress."""

    def __init__(self, progress: object) -> None:
        super().__init__()
        self.progress = progress


class BurstFinished(Message):
    """A burst (or a comparison of past bursts) is done; `summary` is a tui.bench.report.BurstSummary."""

    def __init__(self, summary: object, result: object | None, saved_to: str | None) -> None:
        super().__init__()
        self.summary = summary
        self.result = result  # tui.bench.session.BurstOutcome
        self.saved_to = saved_to


class BurstFailed(Message):
    """A burst could not start or stopped; `error` says why in one line."""

    def __init__(self, error: str, cancelled: bool = False) -> None:
        super().__init__()
        self.error = error
        self.cancelled = cancelled


class BurstHistoryLoaded(Message):
    """The list of past bursts (tui.bench.burst_store.BurstEntry, newest first)."""

    def __init__(self, entries: list[object]) -> None:
        super().__init__()
        self.entries = entries
