"""Grouping the lines of one Python traceback into a single `traceback` error event. vLLM repeats the
record's prefix on every line, so a prefixed line belongs only when process, level and file:line match."""

from __future__ import annotations

import re
from collections import deque

from tui.telemetry.events import ErrorEvent
from tui.telemetry.logs import errors
from tui.telemetry.logs.prefix import LinePrefix

MAX_HEAD_LINES = 20
MAX_TAIL_LINES = 80
MAX_EXCEPTION_CONTINUATION_LINES = 20
MAX_MESSAGE_CHARS = 2000
# pydantic's exception line names only the model; what failed is on the indented line after it
# (vLLM 0.32: `ValidationError: 1 validation error for SpeculativeConfig` / `  Value error, Invalid
# repository ID or local directory specified: '/models/draft'.`), which would pass for a frame line.
_PYDANTIC_EXCEPTION = re.compile(r"ValidationError: \d+ validation errors? for \S+$")


class TracebackGroup:
    """The lines of one traceback seen so far; bounded whatever the input."""

    def __init__(self, line: str, prefix: LinePrefix, backend: str | None) -> None:
        self.time = prefix.time
        self.backend = prefix.backend or backend
        self._key = _record_key(prefix)
        self._head: list[str] = [line]
        self._tail: deque[str] = deque(maxlen=MAX_TAIL_LINES)
        self._omitted = 0
        self._in_exception = False
        self._continuation_lines = 0
        self._awaiting_detail = False
        self.exception: str | None = None
        self.reported_categories: set[str] = set()

    def belongs(self, prefix: LinePrefix) -> bool:
        """Whether a line with this prefix can be part of the traceback (by its prefix alone)."""
        if not prefix.has_prefix:
            return True
        return prefix.backend == "vllm" and _record_key(prefix) == self._key

    def offer(self, line: str, prefix: LinePrefix) -> tuple[bool, str | None]:
        """Add the line if it continues the traceback. Returns (taken, exception text if it is one)."""
        message = prefix.message
        stripped = message.strip()
        if self._awaiting_detail and self.exception is not None and stripped and message[:1] in (" ", "\t"):
            self._awaiting_detail = False
            self.exception = f"{self.exception}: {stripped}"[:MAX_MESSAGE_CHARS]
            self._add(line)
            return True, None
        self._awaiting_detail = False
        if errors.is_frame_line(message) or not stripped:
            self._in_exception = self._in_exception and not errors.is_frame_line(message)
            self._add(line)
            return True, None
        if errors.TRACEBACK_START in message or stripped.startswith(errors.TRACEBACK_CONTINUATIONS):
            self._in_exception = False
            self._add(line)
            return True, None
        if not self._in_exception:
            self._in_exception = True
            self._continuation_lines = 0
            self.exception = stripped[:MAX_MESSAGE_CHARS]
            self._awaiting_detail = _PYDANTIC_EXCEPTION.search(stripped) is not None
            self._add(line)
            return True, self.exception
        # A multi-line exception message (e.g. SGLang's "Possible solutions:" list); `belongs` has
        # already turned away prefixed lines of other records.
        if self._continuation_lines >= MAX_EXCEPTION_CONTINUATION_LINES:
            return False, None
        self._continuation_lines += 1
        self._add(line)
        return True, None

    def event(self) -> ErrorEvent:
        lines = list(self._head)
        if self._omitted:
            lines.append(f"... {self._omitted} lines omitted ...")
        lines.extend(self._tail)
        return ErrorEvent(
            time=self.time,
            backend=self.backend,
            category="traceback",
            message=self.exception or errors.TRACEBACK_START,
            line="\n".join(lines),
        )

    def _add(self, line: str) -> None:
        if len(self._head) < MAX_HEAD_LINES:
            self._head.append(line)
            return
        if len(self._tail) == self._tail.maxlen:
            self._omitted += 1
        self._tail.append(line)


def _record_key(prefix: LinePrefix) -> tuple[str | None, str | None, str | None]:
    return (prefix.source, prefix.level, prefix.origin)
