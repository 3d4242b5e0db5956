"""TUI commands need a terminal: without one, Textual would spin on a closed stdin forever."""

from __future__ import annotations

import sys

ALTERNATIVES = "use `spectop snapshot` / `spectop logs`"


class NoTerminalError(Exception):
    """stdin or stdout is not a terminal; `tui.cli.main` prints the message and exits with 2."""

    def __init__(self, command: str) -> None:
        super().__init__(f"spectop: {command} needs a terminal; {ALTERNATIVES}")


def require_terminal(command: str) -> None:
    """Raise NoTerminalError unless both stdin and stdout are terminals (call it before `App.run`)."""
    for stream in (sys.stdin, sys.stdout):
        if stream is None or stream.closed or not stream.isatty():
            raise NoTerminalError(command)
