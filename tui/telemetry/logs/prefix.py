"""Cleaning a raw log line (escape sequences, `\\r` redraws), splitting off each backend's logger prefix
(vllm.md §2.1, sglang.md §2.1, llamacpp.md §1), and reading the numbers printed in its fields."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.sanitize import strip_escapes

# The process part: `(APIServer pid=1)`, `(EngineCore_DP0 pid=7)`, older `(VllmWorker rank=0 pid=9)`,
# Ray `(RayWorkerWrapper pid=9, ip=10.0.0.1)`.
_PROCESS = r"\((?P<proc>[A-Za-z0-9_]+)[^()]*?\bpid=\d+[^()]*\) "
_VLLM_RECORD = (
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<time>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? "
    r"\[?(?P<origin>[^\]\s]+:\d+)\] ?"
)
_VLLM_PREFIX = re.compile(rf"(?:{_PROCESS})?{_VLLM_RECORD}")
# A custom VLLM_LOGGING_PREFIX sits between the process prefix and the level (vllm.md §2.1).
_VLLM_RECORD_AFTER_CUSTOM = re.compile(rf"(?<![A-Za-z0-9]){_VLLM_RECORD}")
_VLLM_PROCESS_ONLY = re.compile(_PROCESS)
_SGLANG_PREFIX = re.compile(
    r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?P<ms>[.,]\d{1,6})?"
    r"(?P<ranks>(?: [A-Z_]+\d+)*)\] ?"
)
_SGLANG_LEGACY_PREFIX = re.compile(r"\[(?P<hms>\d\d:\d\d:\d\d)(?P<ranks>(?: [A-Z_]+\d+)*)\] ?")
_LLAMACPP_PREFIX = re.compile(r"(?P<time>\d+\.\d\d\.\d\d\d\.\d\d\d) (?P<level>[IWEDT]) ")

_LLAMACPP_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "D": "DEBUG", "T": "DEBUG"}


def clean_line(raw: str) -> str:
    """The printable text of one physical line: no ANSI codes, no line ending, no `\\r` redraws."""
    line = raw
    if "\x1b" in line:
        line = strip_escapes(line)  # every complete escape sequence (OSC too), not only colours
    if "\n" in line:
        line = line.replace("\r\n", "\n").rstrip("\n")
        if "\n" in line:  # several physical lines given at once: keep the last one
            line = line.rsplit("\n", 1)[1]
    if "\r" in line:
        segments = [segment for segment in line.split("\r") if segment.strip()]
        line = segments[-1] if segments else ""
    return line


@dataclass(slots=True)  # not frozen: a frozen dataclass is several times slower to create
class LinePrefix:
    """What the logger prefix of a line says; `message` is the text after it."""

    backend: str | None
    time: str | None
    level: str | None
    source: str | None
    message: str
    has_prefix: bool
    origin: str | None = None  # vLLM `file:line`; only used to tell records apart, never keyed on
    uptime: str | None = None  # llama.cpp's time since start (`time` is wall time only)


def split_prefix(line: str) -> LinePrefix:
    """Split a cleaned line into its logger prefix and message; unknown prefixes keep the whole line."""
    first = line[:1]
    if first in "(DIWEC":  # `(APIServer pid=1) INFO ...`; older vLLM without the process part
        match = _VLLM_PREFIX.match(line)
        if match:
            return _vllm(match, match["proc"], line)
        process = _VLLM_PROCESS_ONLY.match(line) if first == "(" else None
        if process:
            custom = _VLLM_RECORD_AFTER_CUSTOM.search(line, process.end() + 1, _WRAPPER_WINDOW)
            if custom:
                return _vllm(custom, process["proc"], line)
            # raw stderr (uvicorn, tracebacks) relayed with the process prefix only
            level = _uvicorn_level(line, process.end())
            return LinePrefix("vllm", None, level, process["proc"], line[process.end() :], True)
    elif first == "[":
        match = _SGLANG_PREFIX.match(line) or _SGLANG_LEGACY_PREFIX.match(line)
        if match:
            parts = match.groupdict()
            time = f"{parts['date']}T{parts['hms']}" if parts.get("date") else parts["hms"]
            if parts.get("ms"):
                time += "." + parts["ms"][1:]
            rest = line[match.end() :]
            return LinePrefix(
                "sglang", time, _uvicorn_level(rest, 0), parts["ranks"].strip() or None, rest, True
            )
    elif first.isdigit():
        match = _LLAMACPP_PREFIX.match(line)
        if match:
            level = _LLAMACPP_LEVELS[match["level"]]
            return LinePrefix("llamacpp", None, level, None, line[match.end() :], True, uptime=match["time"])
    return _wrapped(line) or LinePrefix(None, None, _uvicorn_level(line, 0), None, line, False)


def _vllm(record: re.Match[str], source: str | None, line: str) -> LinePrefix:
    message = line[record.end() :]
    return LinePrefix("vllm", record["time"], record["level"], source, message, True, record["origin"])


_WRAPPER_WINDOW = 160
# docker / CRI `2026-07-20T09:50:00.123456789Z stdout F `, journald's `--output=short-iso` and the like.
_WRAPPER_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?")


def _wrapped(line: str) -> LinePrefix | None:
    """A backend prefix behind a wrapper's own (docker/CRI `2026-...Z stdout F `, journald `host vllm[1]: `,
    a custom VLLM_LOGGING_PREFIX): found by searching the start of the line instead of anchoring."""
    window = line[:_WRAPPER_WINDOW]
    if "[" not in window and "INFO" not in window and "ERROR" not in window and " I " not in window:
        return None
    for pattern in (_VLLM_PREFIX, _SGLANG_PREFIX, _LLAMACPP_PREFIX):
        match = pattern.search(window, 1)
        if match is None:
            continue
        inner = split_prefix(line[match.start() :])
        if inner.has_prefix:
            if inner.backend == "llamacpp":  # it prints no wall time: the wrapper's own stamp is one
                wall = _WRAPPER_TIME.search(line, 0, match.start())
                inner.time = wall[0] if wall else None
            return inner
    return None


_UVICORN_LEVELS = ("INFO:", "WARNING:", "ERROR:", "CRITICAL:", "DEBUG:")


def _uvicorn_level(text: str, start: int) -> str | None:
    """uvicorn's `ERROR:    Exception in ASGI application` style level prefix, if any."""
    if text.startswith(_UVICORN_LEVELS, start):
        return text[start : text.index(":", start)]
    return None


_INFINITIES = (float("inf"), float("-inf"))


def parse_number(text: str) -> float | None:
    """The number in a field value with its unit dropped (`387.9 tokens/s`, `2 reqs`); a percentage
    becomes a fraction; `nan`, `inf` and garbage give None."""
    value = text.strip()
    space = value.find(" ")
    if space > 0:  # units always follow a space
        value = value[:space]
    scale = 1.0
    if value.endswith("%"):
        value = value[:-1]
        if value[-1:].isdigit() and "e" not in value and "E" not in value:
            value += "e-2"  # scale the decimal text itself: 0.7% is 0.007 exactly, not 0.006999...
        else:
            scale = 0.01
    try:
        number = float(value)
    except ValueError:
        return None
    if number != number or number in _INFINITIES:
        return None
    return number * scale if scale != 1.0 else number


def parse_count(text: str) -> int | None:
    number = parse_number(text)
    if number is None or number < 0:
        return None
    return int(number)


def parse_field_value(text: str) -> bool | int | float | str | None:
    """A SGLang / vLLM field value as its natural type: number (percent as a fraction), bool or text."""
    value = text.strip()
    if value == "True":
        return True
    if value == "False":
        return False
    number = parse_number(value)
    if number is not None:
        return int(number) if number.is_integer() and value.lstrip("-").isdigit() else number
    return value or None


def parse_float_list(text: str) -> list[float] | None:
    """`0.807, 0.612` or `(0.810, 0.476)`; an empty list `()` gives None."""
    inner = text.strip().strip("()").strip()
    if not inner:
        return None
    numbers: list[float] = []
    for item in inner.split(","):
        number = parse_number(item)
        if number is None:
            return None
        numbers.append(number)
    return numbers
