"""The CLI's one choke point for terminal output: `tui.cli.main` wraps stdout and stderr in `SafeStream`,
so every write passes the sanitizer; spectop's own control sequences go through `write_control`."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from tui.sanitize import safe_line, safe_text

ERASE_LINE = "\r\x1b[K"


def terminal_safe(text: str) -> str:
    """`text` as `safe_text` makes it; fast for the usual printable line ending in a newline."""
    if text.isprintable() or (text.endswith("\n") and text[:-1].isprintable()):
        return text
    return safe_text(text)


class SafeStream:
    """A text stream whose `write` sanitizes; everything else is the wrapped stream's."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(terminal_safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def write_control(self, text: str) -> None:
        """Write spectop's own control sequence as it is (never text from a server or a file)."""
        self.inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def write_control(text: str, stream: Any = None) -> None:
    """Write `text` raw to `stream` (default stderr), through a `SafeStream`'s raw path when it is one."""
    stream = sys.stderr if stream is None else stream
    if isinstance(stream, SafeStream):
        stream.write_control(text)
    else:
        stream.write(text)


def progress_line(text: str, stream: Any = None) -> None:
    """Redraw one progress line on a terminal: carriage return, erase line, then `text` made safe."""
    stream = sys.stderr if stream is None else stream
    write_control(ERASE_LINE, stream)
    stream.write(safe_line(text))
    stream.flush()


@contextlib.contextmanager
def sanitized_stdio() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` wrapped in `SafeStream` for the duration (restored after)."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is not None and not isinstance(sys.stdout, SafeStream):
        sys.stdout = SafeStream(sys.stdout)  # type: ignore[assignment,unused-ignore]
    if sys.stderr is not None and not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)  # type: ignore[assignment,unused-ignore]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
