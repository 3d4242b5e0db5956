"""The one handler for failed background workers.

`Worker.StateChanged` does not bubble: it reaches only the node that started the
worker. Every node that starts workers (the apps, the editor and burst screens,
the restart dialog) mixes this in, so a failure is reported the same way
everywhere and never takes the app down (workers run with exit_on_error=False).
Any other unhandled exception does end the app; `WritesRecoveryCopies` saves unsaved edits first.
"""

from __future__ import annotations

import sys
from typing import Any

from textual.app import App
from textual.worker import Worker, WorkerState

from tui.sanitize import safe_line, safe_text


def report_worker_failure(app: App[Any], worker: Worker[Any]) -> None:
    name = worker.name or "background task"
    app.notify(safe_text(f"{name} failed: {worker.error}"), severity="error", timeout=10, markup=False)


class ReportsWorkerFailures:
    """Mixin for a Textual App, Screen or Widget that starts workers."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            report_worker_failure(self.app, event.worker)  # type: ignore[attr-defined]


class WritesRecoveryCopies:
    """Mixin for a Textual App: an unhandled exception first saves every editor's unsaved text.

    Textual ends the app on an exception in a message handler. Before it does, each screen on the
    stack that has `write_recovery_copy()` (the config editor) writes its unsaved text next to its
    file; the notes saying where are printed after the traceback and kept in `recovery_notes`.
    """

    recovery_notes: tuple[str, ...] = ()

    def _handle_exception(self, error: Exception) -> None:
        notes: list[str] = []
        for screen in list(self.screen_stack):  # type: ignore[attr-defined]
            write = getattr(screen, "write_recovery_copy", None)
            if write is None:
                continue
            try:
                note = write()
            except Exception as failure:  # the app is going down: report, never raise again
                note = f"spectop: could not write a recovery copy: {failure}"
            if note:
                notes.append(note)
        self.recovery_notes = tuple(notes)
        super()._handle_exception(error)  # type: ignore[misc]

    def _print_error_renderables(self) -> None:
        super()._print_error_renderables()  # type: ignore[misc]
        for note in self.recovery_notes:
            print(safe_line(note), file=sys.stderr)  # it names the file: any character but / and NUL
