"""What the dashboard knows, as plain data: endpoints, latest readings, history, alerts, log lines.

No Textual here: the app feeds it readings and log lines and the screens read it. Memory is
bounded (history ring buffers, `LOG_LINES_KEPT` lines per endpoint, a capped list of cleared alerts).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from tui.settings import EndpointSettings, Settings
from tui.telemetry.alerts import Alert, AlertEngine, AlertRules
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.history import History, ReadingLike, samples_for
from tui.telemetry.recording import RecordedEndpoint

LOG_LINES_KEPT = 2000
PLACEHOLDER_URL = "http://recorded.invalid"

LogKind = Literal["plain", "stats", "spec", "error"]


@dataclass(frozen=True)
class LogEntry:
    time: float
    line: str
    kind: LogKind


def log_kind(events: Iterable[object]) -> LogKind:
    kinds = {type(event) for event in events}
    if ErrorEvent in kinds:
        return "error"
    if SpecDecodeEvent in kinds:
        return "spec"
    if StatsEvent in kinds:
        return "stats"
    return "plain"


class Board:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.endpoints: list[EndpointSettings] = []
        self._names: set[str] = set()
        self.alerts = AlertEngine(
            AlertRules(
                acceptance_warning=settings.alerts.acceptance_warning,
                acceptance_critical=settings.alerts.acceptance_critical,
                sustained_s=settings.alerts.sustained_s,
            )
        )
        self.alerts_version = 0  # bumped whenever an alert starts or clears
        self.history = History(samples_for(settings.history_s, settings.poll_interval_s))
        self.readings: dict[str, ReadingLike] = {}
        self.logs: dict[str, deque[LogEntry]] = {}
        self.log_failed_lines: dict[str, int] = {}  # lines of an endpoint's log the parser could not read
        for endpoint in settings.endpoints:
            self._add(endpoint)

    def _add(self, endpoint: EndpointSettings) -> None:
        self.endpoints.append(endpoint)
        self._names.add(endpoint.name)
        self.alerts.set_threshold(endpoint.name, endpoint.acceptance_threshold)

    def endpoint(self, name: str) -> EndpointSettings | None:
        return next((endpoint for endpoint in self.endpoints if endpoint.name == name), None)

    def ensure_endpoint(self, name: str, recorded: RecordedEndpoint | None = None) -> bool:
        """Add an endpoint first seen in data (a replayed recording); True when it is new."""
        if name in self._names:
            return False
        try:
            endpoint = EndpointSettings(
                name=name,
                url=(recorded.url if recorded else None) or PLACEHOLDER_URL,
                model=recorded.model if recorded else None,
                acceptance_threshold=recorded.acceptance_threshold if recorded else None,
            )
        except ValidationError:
            endpoint = EndpointSettings(name=name, url=PLACEHOLDER_URL)
        self._add(endpoint)
        return True

    def add_reading(self, reading: ReadingLike) -> list[Alert]:
        """Store one scrape; returns the alerts it started or cleared."""
        self.ensure_endpoint(reading.name)
        self.readings[reading.name] = reading
        self.history.add(reading)
        figures = reading.figures
        acceptance = figures.acceptance_rate if reading.up else None
        k = len(figures.per_position_acceptance) if figures.per_position_acceptance else None
        changes = self.alerts.observe_reading(
            reading.name, reading.time, reading.up, acceptance, figures.mean_acceptance_length, k
        )
        return self._counted(changes)

    def add_log_line(
        self, name: str, time: float, line: str, events: Iterable[object], failed_lines: int = 0
    ) -> tuple[LogEntry, list[Alert]]:
        self.ensure_endpoint(name)
        if failed_lines:
            self.log_failed_lines[name] = failed_lines
        events = list(events)
        entry = LogEntry(time, line, log_kind(events))
        self.logs.setdefault(name, deque(maxlen=LOG_LINES_KEPT)).append(entry)
        changes: list[Alert] = []
        for event in events:
            changes += self.alerts.observe_log_event(name, time, event)
        return entry, self._counted(changes)

    def end_restart(self, name: str, time: float, ok: bool, detail: str) -> list[Alert]:
        """A planned restart is over; a failed one of an endpoint that is down raises "endpoint down"."""
        return self._counted(self.alerts.end_restart(name, time, ok, detail))

    def set_threshold(self, name: str, threshold: float | None) -> None:
        self.alerts.set_threshold(name, threshold)

    def log_entries(self, name: str) -> list[LogEntry]:
        return list(self.logs.get(name, ()))

    def recorded_endpoints(self) -> list[RecordedEndpoint]:
        return [
            RecordedEndpoint(
                name=endpoint.name,
                url=endpoint.url,
                backend=endpoint.backend,
                model=endpoint.model,
                acceptance_threshold=endpoint.acceptance_threshold,
            )
            for endpoint in self.endpoints
        ]

    def _counted(self, changes: list[Alert]) -> list[Alert]:
        if changes:
            self.alerts_version += 1
        return changes
