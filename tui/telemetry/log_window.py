"""A window onto a (possibly huge) log file for the log viewer: the tail first, older pages on demand."""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tui.telemetry.logs.display import display_line

PAGE_BYTES = 256 * 1024
MAX_LINE_CHARS = 4096
MAX_LINES = 200_000
LineLevel = Literal["error", "warning", "info"]
_ERROR_WORDS = (
    "Traceback (most recent call last)",
    "CUDA out of memory",
    "OutOfMemoryError",
    "EngineDeadError",
)


def line_level(raw: str) -> LineLevel:
    """error / warning / info, from the line's logger level (vLLM, SGLang, llama.cpp, uvicorn) or words."""
    level = display_line(raw).level
    if level in ("ERROR", "CRITICAL", "FATAL", "E") or any(word in raw for word in _ERROR_WORDS):
        return "error"
    if level in ("WARNING", "WARN", "W"):
        return "warning"
    return "info"


@dataclass
class LogWindow:
    path: Path
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_LINES))
    start: int = 0  # file offset of the first line held
    end: int = 0  # file offset after the last complete line held
    inode: int | None = None
    error: str | None = None  # why the file cannot be read now (missing, no permission)
    restarted: int = 0  # how often the file was truncated or replaced since opened
    trimmed: bool = False  # the oldest lines held were dropped (MAX_LINES): no paging back past them

    @property
    def at_start(self) -> bool:
        return self.start == 0

    def open(self) -> None:
        """Read the tail: the last `PAGE_BYTES` of the file, from its first complete line."""
        self.lines.clear()
        self.trimmed = False
        try:
            with self.path.open("rb") as handle:
                stat = os.fstat(handle.fileno())
                self.inode, start = stat.st_ino, max(0, stat.st_size - PAGE_BYTES)
                handle.seek(start)
                data = handle.read(stat.st_size - start)
        except OSError as error:
            self.error = f"{self.path}: {error.strerror or error}"
            self.start = self.end = 0
            return
        self.error = None
        if start > 0:  # the page began mid-line: that part belongs to the older page
            cut = data.find(b"\n") + 1
            start, data = start + cut, data[cut:]
        complete = data.rfind(b"\n") + 1  # a line still being written is read once it ends
        self.start, self.end = start, start + complete
        self.lines.extend(_split(data[:complete]))

    def older(self, page_bytes: int = PAGE_BYTES) -> int:
        """Read the page before the first line held; returns how many lines were added at the top."""
        if self.at_start or self.trimmed or self.error is not None:
            return 0
        begin = max(0, self.start - page_bytes)
        try:
            with self.path.open("rb") as handle:
                if os.fstat(handle.fileno()).st_ino != self.inode:
                    return 0  # replaced since: its older lines are another file's
                handle.seek(begin)
                data = handle.read(self.start - begin)
        except OSError:
            return 0
        if begin > 0:
            cut = data.find(b"\n") + 1
            if cut == 0:  # one line longer than the page: read on backwards next time
                self.start = begin
                return 0
            begin, data = begin + cut, data[cut:]
        added = _split(data)
        room = MAX_LINES - len(self.lines)
        added = added[-room:] if room > 0 else []
        self.lines.extendleft(reversed(added))
        self.start = begin
        return len(added)

    def newer(self) -> list[str]:
        """The lines appended since the last read; after a truncation or rotation, the new file's tail."""
        try:
            stat = self.path.stat()
        except OSError as error:
            self.error = f"{self.path}: {error.strerror or error}"
            return []
        if self.inode is None or stat.st_ino != self.inode or stat.st_size < self.end:
            self.restarted += int(self.inode is not None)
            self.open()
            return list(self.lines)
        if stat.st_size == self.end:
            return []
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.end)
                data = handle.read(min(stat.st_size - self.end, 16 * PAGE_BYTES))
        except OSError:
            return []
        complete = data.rfind(b"\n") + 1
        new = _split(data[:complete])
        self.end += complete
        # the oldest go: their offset is no longer known
        self.trimmed = self.trimmed or len(self.lines) + len(new) > MAX_LINES
        self.lines.extend(new)
        return new


def _split(data: bytes) -> list[str]:
    lines = data.decode("utf-8", errors="replace").split("\n")
    if not lines[-1]:
        lines.pop()
    return [line.rstrip("\r")[:MAX_LINE_CHARS] for line in lines]
