"""Modal dialogs of the config editor: confirm, the diff before saving, restart progress."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import ClassVar

import httpx
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Log, Static

from tui.configs.restart import HEALTH_TIMEOUT_S, last_errors, read_identity, run_restart, wait_for_health
from tui.format import fmt_duration, fmt_setting
from tui.sanitize import safe_line, safe_text
from tui.widgets.messages import (
    HealthChecked,
    ReportsWorkerFailures,
    RestartExited,
    RestartOutput,
    RestartStarted,
)


class ConfirmDialog(ModalScreen[str | None]):
    """A question answered with a key; dismisses with the key's answer (None on escape)."""

    DEFAULT_CSS = """
    ConfirmDialog { align: center middle; }
    ConfirmDialog > Vertical { width: 72; height: auto; max-height: 20; border: thick $warning;
                               background: $surface; padding: 0 1; }
    ConfirmDialog .keys { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "answer('')", "cancel")]

    def __init__(self, question: str, answers: dict[str, str]) -> None:
        """`answers` maps a key to (answer): e.g. {"y": "yes", "n": ""}."""
        super().__init__()
        self.question = question
        self.answers = answers

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(safe_text(self.question), markup=False)  # it may quote a file name
            keys = "  ".join(f"[{key}] {answer or 'cancel'}" for key, answer in self.answers.items())
            yield Static(keys + "  [esc] cancel", classes="keys", markup=False)

    def on_key(self, event: events.Key) -> None:
        if event.key in self.answers:
            event.stop()
            self.dismiss(self.answers[event.key] or None)

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer or None)


DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("+", "green"), ("-", "red"), ("@@", "cyan"))  # first wins


def diff_text(diff: str) -> Text:
    """A unified diff, coloured, each line made safe (TOML comments may hold controls)."""
    text = Text()
    for line in map(safe_line, diff.splitlines()):
        style = next((style for start, style in DIFF_STYLES if line.startswith(start)), "")
        text.append(line + "\n", style=style)
    return text


class DiffDialog(ModalScreen[bool]):
    """The change about to be saved; y/enter saves, n/escape goes back."""

    DEFAULT_CSS = """
    DiffDialog { align: center middle; }
    DiffDialog > Vertical { width: 100%; height: 100%; border: thick $primary; background: $surface; }
    DiffDialog VerticalScroll { height: 1fr; }
    DiffDialog .summary { height: auto; color: $warning; }
    DiffDialog .keys { height: 1; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "decide(True)", "save"),
        Binding("n,escape", "decide(False)", "back"),
    ]
    summary_class, diff_id = "summary", "diff"

    def __init__(self, title: str, diff: str, summary: str = "", *, action: str = "save") -> None:
        """`action`: what y does, in the words of the key that opened it ("save", "save & restart")."""
        super().__init__()
        self.title_text = title
        self.diff = diff
        self.summary = summary
        self.action = action

    def keys(self) -> str:
        return f"[y/enter] {self.action}   [n/esc] back"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(safe_line(self.title_text), markup=False)
            if self.summary:
                yield Static(safe_text(self.summary), classes=self.summary_class, markup=False)
            with VerticalScroll():
                yield Static(diff_text(self.diff) if self.diff else "(no diff)", id=self.diff_id)
            yield Static(self.keys(), classes="keys", markup=False)

    def action_decide(self, save: bool) -> None:
        self.dismiss(save)


class RestartDialog(ReportsWorkerFailures, ModalScreen[None]):
    """Runs the restart command, then waits for /health; on failure the log's error lines say why."""

    DEFAULT_CSS = """
    RestartDialog { align: center middle; }
    RestartDialog > Vertical { width: 100%; height: 100%; border: thick $accent; background: $surface; }
    RestartDialog Log { height: 1fr; }
    RestartDialog #restart-status { height: auto; max-height: 8; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "close")]

    def __init__(
        self,
        argv: list[str],
        health_url: str | None,
        client: httpx.AsyncClient | None,
        *,
        log_file: Path | None = None,
        health_timeout_s: float = HEALTH_TIMEOUT_S,
        metrics_url: str | None = None,
    ) -> None:
        super().__init__()
        self.argv = argv
        self.health_url = health_url
        # Where the process identity is read (a /health 200 from the old process is not "back").
        if metrics_url is None and health_url and health_url.rstrip("/").endswith("/health"):
            metrics_url = health_url.rstrip("/").removesuffix("/health") + "/metrics"
        self.metrics_url = metrics_url
        self.client = client
        self.log_file = log_file
        self.health_timeout_s = health_timeout_s
        self.log_errors: list[str] = []
        self.finished = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(safe_line(f"save & restart · $ {shlex.join(self.argv)}"), markup=False)
            yield Log(id="restart-log", max_lines=2000)
            yield Static("running…", id="restart-status", markup=False)
            yield Static("[esc] close", markup=False)

    def on_mount(self) -> None:
        self.run_worker(self._run(), exclusive=True, group="restart", exit_on_error=False)

    async def _run(self) -> None:
        self.post_message(RestartStarted(self.health_url))  # the app shows "restarting", not "down"
        log_start = await asyncio.to_thread(_size_of, self.log_file)
        before = None
        if self.client is not None and self.metrics_url:
            before = await read_identity(self.client, self.metrics_url)
        try:
            code = await run_restart(self.argv, lambda line: self.post_message(RestartOutput(line)))
        except (OSError, TimeoutError) as error:
            await self._read_log_errors(log_start)
            self.post_message(RestartExited(None, str(error) or type(error).__name__))
            return
        if code != 0:
            await self._read_log_errors(log_start)
        self.post_message(RestartExited(code))
        if code != 0 or not self.health_url or self.client is None:
            return

        last_detail = "no answer"

        def polled(back: bool, detail: str, elapsed: float) -> None:
            nonlocal last_detail
            last_detail = detail
            self.post_message(HealthChecked(back, detail, elapsed))

        timeout_s = self.health_timeout_s
        back = await wait_for_health(self.client, self.health_url, polled, timeout_s=timeout_s, before=before)
        if not back:
            await self._read_log_errors(log_start)
            self.post_message(
                HealthChecked(False, f"no answer within {fmt_setting(timeout_s)} s ({last_detail})", -1.0)
            )

    async def _read_log_errors(self, start: int) -> None:
        if self.log_file is not None:
            self.log_errors = await asyncio.to_thread(last_errors, self.log_file, start=start)

    def _failed(self, status: str) -> str:
        self.finished = True
        if not self.log_errors:
            return status
        lines = "\n".join(f"  {line}" for line in self.log_errors)
        return f"{status}\nlast errors in {self.log_file}:\n{lines}"

    def on_restart_output(self, message: RestartOutput) -> None:
        self.query_one(Log).write_line(message.line)

    def on_restart_exited(self, message: RestartExited) -> None:
        status = self.query_one("#restart-status", Static)
        if message.returncode is None:
            status.update(self._failed(f"✗ could not run the command: {message.detail}"))
        elif message.returncode != 0:
            status.update(self._failed(f"✗ the command exited with {message.returncode}"))
        elif self.health_url:
            status.update(f"command done; waiting for {self.health_url} …")
        else:
            status.update("✓ command done (no health URL to wait for)")
            self.finished = True

    def on_health_checked(self, message: HealthChecked) -> None:
        status = self.query_one("#restart-status", Static)
        if message.back:
            status.update(f"✓ server is back ({message.detail}) after {fmt_duration(message.elapsed_s)}")
            self.finished = True
        elif message.elapsed_s < 0:
            status.update(self._failed(f"✗ {self.health_url} did not answer: {message.detail}"))
        else:
            status.update(
                f"waiting for {self.health_url} … {message.detail} "
                f"({fmt_duration(message.elapsed_s)} of {fmt_setting(self.health_timeout_s)} s)"
            )

    def action_close(self) -> None:
        self.dismiss(None)


def _size_of(path: Path | None) -> int:
    """Where the restart's own log lines start (0 without a log, or when it cannot be read)."""
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0
