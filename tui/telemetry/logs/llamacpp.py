"""llama.cpp `llama-server` log grammar (llamacpp.md §3): per-request `draft acceptance`, `acc per pos` and
the lifetime `statistics` line. Its `0.00.640.963` stamp is the time since start: `uptime`, never `time`."""

from __future__ import annotations

import re

from tui.telemetry.events import SpecDecodeEvent
from tui.telemetry.logs.prefix import split_prefix
from tui.telemetry.logs.values import parse_float_list, parse_number

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


def _times(line: str, end: int) -> tuple[str | None, str | None]:
    elapsed = _ELAPSED.match(line)  # +20% lines/s on `draft acceptance` lines (bench_log_parse.py mix)
    if elapsed:
        return None, elapsed[1]
    prefix = split_prefix(line[:end])
    return prefix.time, prefix.uptime


def parse_acceptance(line: str, start: int) -> SpecDecodeEvent | None:
    match = _ACCEPTANCE.match(line, start)
    if match is None:
        return None
    accepted, drafted = int(match["accepted"]), int(match["drafted"])
    rate = parse_number(match["rate"])
    if rate is None and drafted:
        rate = accepted / drafted
    time, uptime = _times(line, start)
    return SpecDecodeEvent(
        time=time,
        uptime=uptime,
        backend="llamacpp",
        mean_acceptance_length=parse_number(match["mean"]) if match["mean"] else None,
        acceptance_rate=rate,
        accepted_tokens=accepted,
        drafted_tokens=drafted,
        scope="request",
        line=line,
    )


def parse_per_position(line: str, start: int) -> SpecDecodeEvent | None:
    match = _PER_POSITION.match(line, start)
    if match is None:
        return None
    positions = parse_float_list(match["positions"])
    if positions is None:
        return None
    time, uptime = _times(line, start)
    return SpecDecodeEvent(
        time=time,
        uptime=uptime,
        backend="llamacpp",
        per_position_acceptance=positions,
        scope="request",
        line=line,
    )


def parse_statistics(line: str) -> SpecDecodeEvent | None:
    counts = {name: int(match[1]) for name, pattern in _STATISTICS.items() if (match := pattern.search(line))}
    if "accepted" not in counts or "drafted" not in counts:
        return None
    mean = _STATISTICS_MEAN.search(line)
    positions = _STATISTICS_POSITIONS.search(line)
    accepted, drafted = counts["accepted"], counts["drafted"]
    time, uptime = _times(line, len(line))
    return SpecDecodeEvent(
        time=time,
        uptime=uptime,
        backend="llamacpp",
        mean_acceptance_length=parse_number(mean[1]) if mean else None,
        acceptance_rate=accepted / drafted if drafted else None,
        per_position_acceptance=parse_float_list(positions["positions"]) if positions else None,
        accepted_tokens=accepted,
        drafted_tokens=drafted,
        num_drafts=counts.get("drafts"),
        scope="lifetime",
        line=line,
    )
