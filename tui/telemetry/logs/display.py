"""A log line as the log pane shows it: prefix cut to HH:MM:SS and a non-INFO level; access lines flagged."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.telemetry.logs.prefix import clean_line, split_prefix

_UVICORN_LEVEL = re.compile(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
_METHODS = r"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)"
_UVICORN_ACCESS = re.compile(rf'\S+ - "{_METHODS} \S+ HTTP/[\d.]+" \d{{3}}\b')
_LLAMACPP_ACCESS = re.compile(rf"(?:^|\s)request: {_METHODS} \S+ \S+ \d{{3}}\b")
# llama.cpp's `srv  log_server_r: `, `slot print_timing: `, `srv    operator(): operator(): `.
_LLAMACPP_SOURCE = re.compile(r"[a-z]{2,6} +[A-Za-z_~][\w:~]*(?:\(\))?: (?:[A-Za-z_~][\w:~]*\(\): )?")
_CLOCK = re.compile(r"(?:^|[ T])(\d\d:\d\d:\d\d)")

_NUMBER = r"[-+]?\d(?:[\d,]*\d)?(?:\.\d+)?"
_UNIT = (
    r"(?:%|x\b|\s?(?:tokens/s|tokens per second|token/s|tok/s|toks/s|reqs?/s|reqs\b|tokens\b|ms\b|s\b"
    r"|[KMGT]i?B\b|seconds\b))"
)
_FIGURE_WITH_UNIT = re.compile(rf"(?<![\w.]){_NUMBER}{_UNIT}")
_NAMED_FIGURE = re.compile(rf"[:=] +(?P<figure>{_NUMBER})(?![\w.:])")


@dataclass(slots=True, frozen=True)
class DisplayLine:
    """What the pane shows of one line; `access` lines are hidden unless asked for."""

    time: str | None  # HH:MM:SS, or None when the line has no wall time
    level: str | None  # None for INFO (the usual case) and lines without a level
    message: str
    access: bool

    @property
    def head(self) -> str:
        """`14:02:24 ` / `14:02:24 WARNING ` / `` — what comes before the message."""
        parts = [part for part in (self.time, self.level) if part]
        return " ".join(parts) + " " if parts else ""

    @property
    def text(self) -> str:
        return self.head + self.message


def short_time(time: str | None) -> str | None:
    """`08-20 14:02:24`, `2026-07-20T09:50:00.123`, `2026-07-20T09:50:00Z` → `14:02:24` / `09:50:00`."""
    match = _CLOCK.search(time) if time else None
    return match[1] if match else None


def display_line(raw: str) -> DisplayLine:
    """The line without its logger prefix, its time as HH:MM:SS; unknown prefixes keep the whole line."""
    line = clean_line(raw)
    prefix = split_prefix(line)
    message, level = prefix.message, prefix.level
    if uvicorn := _UVICORN_LEVEL.match(message):
        level, message = uvicorn["level"], message[uvicorn.end() :]
    if prefix.backend == "llamacpp" and (source := _LLAMACPP_SOURCE.match(message)):
        message = message[source.end() :]
    if not prefix.has_prefix and not uvicorn:
        return DisplayLine(None, None, line, is_access(line))
    return DisplayLine(
        short_time(prefix.time), None if level in (None, "INFO") else level, message, is_access(message)
    )


def is_access(message: str) -> bool:
    """An HTTP access line (uvicorn's or llama.cpp's), with or without its logger prefix."""
    if '" ' in message and _UVICORN_ACCESS.search(message):
        return True
    return "request: " in message and _LLAMACPP_ACCESS.search(message) is not None


def figure_spans(text: str, *, named: bool = False) -> list[tuple[int, int]]:
    """Start/end of each figure in `text` (numbers with units); with `named`, also every `name: number`."""
    spans = [match.span() for match in _FIGURE_WITH_UNIT.finditer(text)]
    if named:
        spans += [match.span("figure") for match in _NAMED_FIGURE.finditer(text)]
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
