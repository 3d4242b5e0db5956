"""The one handler for failed background workers.

`Worker.StateChanged` does not bubble: it reaches only the node that started the
worker. Every node that starts workers (the apps, the editor and burst screens,
the restart dialog) mixes this in, so a failure is reported the same way
everywhere and never takes the app down (workers run with exit_on_error=False).
"""

from __future__ import annotations

from textual.app import App
from textual.worker import Worker, WorkerState

from tui.sanitize import safe_text


def report_worker_failure(app: App[object], worker: Worker[object]) -> None:
    name = worker.name or "background task"
    app.notify(safe_text(f"{name} failed: {worker.error}"), severity="error", timeout=10, markup=False)


class ReportsWorkerFailures:
    """Mixin for a Textual App, Screen or Widget that starts workers."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            report_worker_failure(self.app, event.worker)  # type: ignore[attr-defined]
