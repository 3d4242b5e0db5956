"""What a source tells the dashboard, one typed update at a time (plain data, no Textual)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tui.gpu.monitor import EndpointGpus
from tui.telemetry.events import LogEvent
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import GuardLogRecord, RecordedEndpoint


@dataclass(frozen=True)
class ReadingArrived:
    """One scrape of one endpoint (live, or a recorded one played back)."""

    reading: EndpointReading


@dataclass(frozen=True)
class ReadingsArrived:
    """The scrapes of a whole fleet poll in one update: the screens are told, and draw, once."""

    readings: tuple[EndpointReading, ...]


@dataclass(frozen=True)
class LogLineArrived:
    """A log line and the events it completed (`line` None: events held back until the log went quiet)."""

    endpoint: str
    time: float
    line: str | None
    events: list[LogEvent] = field(default_factory=list)
    failed_lines: int = 0  # lines of this log the parser could not read so far (`LogParser.failed_lines`)


@dataclass(frozen=True)
class EndpointsNamed:
    """The endpoints a recording's header names (a replay learns its endpoints from the file)."""

    endpoints: list[RecordedEndpoint]


@dataclass(frozen=True)
class ThresholdRead:
    """An endpoint's `acceptance_threshold` as its config file says now (None: the settings' value)."""

    endpoint: str
    threshold: float | None


@dataclass(frozen=True)
class Notice:
    """Something to say once (a toast): a rotated recording, a skipped line, a task that ended."""

    message: str
    severity: Literal["information", "warning", "error"] = "information"
    title: str = ""
    timeout_s: float = 8.0


@dataclass(frozen=True)
class SeriesLoaded:
    """Past figures per endpoint, oldest first (fleet mode's `query_range` at start), for the series."""

    points: dict[str, list[tuple[float, Figures]]]


@dataclass(frozen=True)
class ImbalanceSeen:
    """Fleet mode: an endpoint is far off its group (`message` says how), or back in line (None)."""

    endpoint: str
    time: float
    message: str | None


@dataclass(frozen=True)
class SourceDown:
    """Fleet mode: the source itself ("Prometheus") failed (`message` says how), or answers again (None)."""

    source: str
    time: float
    message: str | None


@dataclass(frozen=True)
class Finished:
    """The source has nothing more to say (the end of a recording)."""


@dataclass(frozen=True)
class GpusPolled:
    """One poll of every endpoint's GPU sources, and the keys of GPUs more than one endpoint shows."""

    time: float
    views: dict[str, EndpointGpus]
    shared: frozenset[str] = frozenset()


@dataclass(frozen=True)
class GuardReplayed:
    """A recorded fallback-guard action played back: into the alerts list as it was logged."""

    record: GuardLogRecord


Update = (
    ReadingArrived
    | ReadingsArrived
    | LogLineArrived
    | EndpointsNamed
    | ThresholdRead
    | Notice
    | Finished
    | SeriesLoaded
    | ImbalanceSeen
    | SourceDown
    | GpusPolled
    | GuardReplayed
)
