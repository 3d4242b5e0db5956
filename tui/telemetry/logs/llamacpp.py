"""llama.cpp `llama-server` log grammar (llamacpp.md §3): per-request `draft acceptance`, `acc per pos` and
the lifetime `statistics` line. Its `0.00.640.963` stamp is the time since start: `uptime`, never `time`."""

from __future__ import annotations

import re
from typing import Any, Literal

from tui.telemetry.events import SpecDecodeEvent
from tui.telemetry.logs.prefix import parse_float_list, parse_number, split_prefix

ACCEPTANCE_MARKER = "draft acceptance"  # `draft acceptance = ...`; before 2025 `draft acceptance rate = ...`
PER_POSITION_MARKER = "acc per pos = "
STATISTICS_MARKER = "#acc tokens = "

_ACCEPTANCE = re.compile(
    r"draft acceptance(?: rate)? = (?P<rate>[-+\d.eE]+|nan|-?inf) "
    r"\(\s*(?P<accepted>\d+) accepted /\s*(?P<drafted>\d+) generated\)"
    r"(?:, mean len =\s*(?P<mean>[-+\d.eE]+|nan|-?inf))?"
)
_ELAPSED = re.compile(r"(\d+\.\d\d\.\d\d\d\.\d\d\d) [IWEDT] ")
_PER_POSITION = re.compile(r"acc per pos = \((?P<positions>[^)]*)\)")
_STATISTICS = {
    "drafts": re.compile(r"#gen drafts =\s*(\d+)"),
    "drafted": re.compile(r"#gen tokens =\s*(\d+)"),
    "accepted": re.compile(r"#acc tokens =\s*(\d+)"),
}
_STATISTICS_MEAN = re.compile(r"#mean acc len =\s*([\d.]+)")
_STATISTICS_POSITIONS = re.compile(r"#acc rate/pos = \((?P<positions>[^)]*)\)")


def _event(line: str, end: int, scope: Literal["request", "lifetime"], **fields: Any) -> SpecDecodeEvent:
    """The event, timed by the line's prefix (the elapsed stamp alone matched first: faster)."""
    if elapsed := _ELAPSED.match(line):
        time, uptime = None, elapsed[1]
    else:
        prefix = split_prefix(line[:end])
        time, uptime = prefix.time, prefix.uptime
    return SpecDecodeEvent(time=time, uptime=uptime, backend="llamacpp", scope=scope, line=line, **fields)


def parse_acceptance(line: str, start: int) -> SpecDecodeEvent | None:
    match = _ACCEPTANCE.match(line, start)
    if match is None:
        return None
    accepted, drafted = int(match["accepted"]), int(match["drafted"])
    rate = parse_number(match["rate"])
    if rate is None and drafted:
        rate = accepted / drafted
    return _event(
        line,
        start,
        "request",
        mean_acceptance_length=parse_number(match["mean"]) if match["mean"] else None,
        acceptance_rate=rate,
        accepted_tokens=accepted,
        drafted_tokens=drafted,
    )


def parse_per_position(line: str, start: int) -> SpecDecodeEvent | None:
    match = _PER_POSITION.match(line, start)
    if match is None:
        return None
    positions = parse_float_list(match["positions"])
    return None if positions is None else _event(line, start, "request", per_position_acceptance=positions)


def parse_statistics(line: str) -> SpecDecodeEvent | None:
    counts = {name: int(match[1]) for name, pattern in _STATISTICS.items() if (match := pattern.search(line))}
    if "accepted" not in counts or "drafted" not in counts:
        return None
    mean = _STATISTICS_MEAN.search(line)
    positions = _STATISTICS_POSITIONS.search(line)
    accepted, drafted = counts["accepted"], counts["drafted"]
    return _event(
        line,
        len(line),
        "lifetime",
        mean_acceptance_length=parse_number(mean[1]) if mean else None,
        acceptance_rate=accepted / drafted if drafted else None,
        per_position_acceptance=parse_float_list(positions["positions"]) if positions else None,
        accepted_tokens=accepted,
        drafted_tokens=drafted,
        num_drafts=counts.get("drafts"),
    )
