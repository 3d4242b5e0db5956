"""The one handler for failed background workers (a toast and the debug log, never the app down), and the
notes of the editor's recovery copies printed after the app ends."""

from __future__ import annotations

import logging
import sys
from typing import Any, Protocol

from textual.app import App
from textual.worker import Worker, WorkerState

from tui.sanitize import safe_line, safe_text

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
