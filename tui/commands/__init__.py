"""One module per `spectop` command; see `tui.cli`."""

from __future__ import annotations

import sys
from typing import Any

from textual.app import App

from tui.ui.terminal_guard import run_app
from tui.widgets.messages import KeepsRecoveryNotes, print_recovery_notes

# The README's exit codes: done, a failure the command reports, bad arguments / unreadable file, cancelled.
EXIT_OK, EXIT_FAILED, EXIT_BAD_ARGUMENTS, EXIT_CANCELLED = 0, 1, 2, 130


class NoTerminalError(Exception):
    """stdin or stdout is not a terminal (Textual would spin on a closed stdin forever); exit code 2."""

    def __init__(self, command: str) -> None:
        super().__init__(f"spectop: {command} needs a terminal; use `spectop snapshot` / `spectop logs`")


def require_terminal(command: str) -> None:
    """Raise NoTerminalError unless both stdin and stdout are terminals (call it before `App.run`)."""
    for stream in (sys.stdin, sys.stdout):
        if stream is None or stream.closed or not stream.isatty():
            raise NoTerminalError(command)


def say(command: str, message: str) -> None:
    """A line on stderr from `spectop COMMAND` (no command: the dashboard's)."""
    print(f"spectop {command}: {message}" if command else f"spectop: {message}", file=sys.stderr, flush=True)


def fail(command: str, message: str, code: int = EXIT_BAD_ARGUMENTS) -> int:
    """Say what stopped `spectop COMMAND`; the exit code to return (2: bad arguments)."""
    say(command, message)
    return code


def run_until_quit(app: App[Any]) -> int:
    """Run a Textual app, then print its recovery notes (after Textual's traceback); its exit code."""
    run_app(app)
    if isinstance(app, KeepsRecoveryNotes):
        print_recovery_notes(app)
    return app.return_code or 0
