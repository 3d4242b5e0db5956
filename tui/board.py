"""What the dashboard knows, as plain data (no Textual): endpoints, readings, figure series, alerts, log
lines, each bounded. A source's updates go in through `apply`; the screens read it."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import ValidationError

from tui.advice.advisor import Advice
from tui.advice.live import AdviceBook, ConfigFacts, KeptModels
from tui.gpu.alerts import memory_high_with_speculation
from tui.gpu.history import GpuHistory
from tui.gpu.monitor import EndpointGpus
from tui.settings import SETTINGS_FILE_NAME, EndpointSettings, Settings
from tui.sources.updates import (
    EndpointsNamed,
    Finished,
    GpusPolled,
    GuardReplayed,
    ImbalanceSeen,
    LogLineArrived,
    ReadingArrived,
    ReadingsArrived,
    SeriesLoaded,
    SourceDown,
    ThresholdRead,
    Update,
)
from tui.telemetry.alerts import Alert, AlertEngine, AlertRules
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import RecordedEndpoint
from tui.telemetry.series import SeriesStore, samples_for

LOG_LINES_KEPT = 2000
PLACEHOLDER_URL = "http://recorded.invalid"

LogKind = Literal["plain", "stats", "spec", "error"]


@dataclass(frozen=True)
class LogEntry:
    time: float
    line: str
    kind: LogKind


@dataclass(frozen=True)
class Applied:
    """What one update changed: endpoints to redraw, the log line to show, alerts started or cleared."""

    changed: tuple[str, ...] = ()
    log_line: tuple[str, LogEntry] | None = None
    alerts: list[Alert] = field(default_factory=list)


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
        self._by_name: dict[str, EndpointSettings] = {}
        self._peer_models: tuple[str, ...] | None = None  # `peer_models()`, until a model changes
        warning_set = settings.alerts.model_fields_set
        self.alerts = AlertEngine(
            AlertRules(
                acceptance_warning=settings.alerts.acceptance_warning,
                warning_source=SETTINGS_FILE_NAME if "acceptance_warning" in warning_set else "default",
                acceptance_critical=settings.alerts.acceptance_critical,
                sustained_s=settings.alerts.sustained_s,
            )
        )
        self.series = SeriesStore(samples_for(settings.history_s, settings.poll_interval_s))
        self.readings: dict[str, EndpointReading] = {}
        self.logs: dict[str, deque[LogEntry]] = {}
        self.log_failed_lines: dict[str, int] = {}  # lines of an endpoint's log the parser could not read
        self.gpus: dict[str, EndpointGpus] = {}  # each endpoint's GPUs at the last GPU poll, or why none
        self.gpu_shared: frozenset[str] = frozenset()  # GPU keys more than one endpoint shows
        self.gpu_history = GpuHistory(settings.history_s)  # every GPU's readings, by key
        self.drafting: dict[str, bool] = {}  # endpoints whose figures have shown drafting (since up)
        self.advice: AdviceBook | None = None  # the what-if advisor, once `enable_advice` gave it models
        for endpoint in settings.endpoints:
            self._add(endpoint)

    def _add(self, endpoint: EndpointSettings, source: str = SETTINGS_FILE_NAME) -> None:
        """`source`: where the endpoint's own `acceptance_threshold` comes from (settings, recording)."""
        self.endpoints.append(endpoint)
        self._by_name[endpoint.name] = endpoint
        self._peer_models = None
        self.alerts.set_threshold(endpoint.name, endpoint.acceptance_threshold, source)

    def endpoint(self, name: str) -> EndpointSettings | None:
        return self._by_name.get(name)

    def peer_models(self) -> tuple[str, ...]:
        """Every model the endpoints show (the latest reading's, else the settings'), each once, sorted, for
        `tui.widgets.card_view.short_model`; computed once per change of a model, not once per card."""
        if self._peer_models is None:
            models = {self.model_of(endpoint.name) for endpoint in self.endpoints}
            self._peer_models = tuple(sorted(model for model in models if model))
        return self._peer_models

    def model_of(self, name: str) -> str | None:
        reading = self.readings.get(name)
        endpoint = self._by_name.get(name)
        return (reading.model if reading is not None else None) or (endpoint.model if endpoint else None)

    def ensure_endpoint(self, name: str, recorded: RecordedEndpoint | None = None) -> bool:
        """Add an endpoint first seen in data (a replayed recording); True when it is new."""
        if name in self._by_name:
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
        self._add(endpoint, "recording")
        return True

    def apply(self, update: Update) -> Applied:
        """One update from a source (a notice changes nothing here)."""
        if isinstance(update, ReadingArrived | ReadingsArrived):
            readings = (update.reading,) if isinstance(update, ReadingArrived) else update.readings
            alerts = [alert for reading in readings for alert in self.add_reading(reading)]
            return Applied(changed=tuple(reading.name for reading in readings), alerts=alerts)
        if isinstance(update, LogLineArrived):
            return self._apply_log(update)
        if isinstance(update, EndpointsNamed):
            added = [named.name for named in update.endpoints if self.ensure_endpoint(named.name, named)]
            return Applied(changed=tuple(added))
        if isinstance(update, ThresholdRead):
            name = update.endpoint
            before = self.alerts.threshold(name), self.alerts.threshold_source(name)
            endpoint = self._by_name.get(name)
            source = endpoint.config_file.name if endpoint and endpoint.config_file else "config file"
            self.alerts.set_threshold(name, update.threshold, source)  # None: back to the settings' value
            after = self.alerts.threshold(name), self.alerts.threshold_source(name)
            return Applied(changed=() if after == before else (name,))
        if isinstance(update, Finished):
            return Applied(changed=tuple(endpoint.name for endpoint in self.endpoints))
        if isinstance(update, SeriesLoaded):
            for name, points in update.points.items():
                self.ensure_endpoint(name)
                series = self.series.endpoint(name)
                for time, figures in points:
                    series.add(time, figures)
            return Applied(changed=tuple(update.points))
        if isinstance(update, ImbalanceSeen):
            alerts = self.alerts.observe_condition(update.endpoint, "imbalance", update.time, update.message)
            return Applied(changed=(update.endpoint,) if alerts else (), alerts=alerts)
        if isinstance(update, SourceDown):
            alerts = self.alerts.observe_condition(update.source, "source_down", update.time, update.message)
            return Applied(alerts=alerts)
        if isinstance(update, GpusPolled):
            return self.add_gpus(update)
        if isinstance(update, GuardReplayed):
            record = update.record
            self.ensure_endpoint(record.endpoint)
            self.alerts.note(record.endpoint, record.time, record.message, record.diff)
            return Applied(changed=(record.endpoint,))
        return Applied()

    def _apply_log(self, update: LogLineArrived) -> Applied:
        name = update.endpoint
        new = self.ensure_endpoint(name)
        log_line = None
        if update.line is None:  # events held back until the log went quiet: no new line to show
            alerts = self.add_log_events(name, update.time, update.events)
        else:
            entry, alerts = self.add_log_line(
                name, update.time, update.line, update.events, update.failed_lines
            )
            log_line = (name, entry)
        return Applied(changed=(name,) if alerts or new else (), log_line=log_line, alerts=alerts)

    def add_reading(self, reading: EndpointReading) -> list[Alert]:
        """Store one scrape; returns the alerts it started or cleared."""
        self.ensure_endpoint(reading.name)
        before = self.readings.get(reading.name)
        if before is None or before.model != reading.model:
            self._peer_models = None
        self.readings[reading.name] = reading
        self.series.add(reading)
        if reading.source_failed:  # nothing known of the endpoint: no alert of its own starts or clears
            return []
        figures = reading.figures
        acceptance = figures.acceptance_rate if reading.up else None
        k = len(figures.per_position_acceptance) if figures.per_position_acceptance else None
        changes = self.alerts.observe_reading(
            reading.name, reading.time, reading.up, acceptance, figures.mean_acceptance_length, k
        )
        self._note_drafting(reading)
        if self.advice is not None:
            endpoint = self.endpoint(reading.name)
            url = reading.url or (endpoint.url if endpoint else None)
            model = reading.model or (endpoint.model if endpoint else None)
            message = self.advice.observe(reading.name, url, model, figures, reading.up, reading.time)
            changes += self.alerts.observe_condition(reading.name, "advice", reading.time, message)
        return changes

    def enable_advice(self, kept: KeptModels) -> None:
        """The advisor on every reading from now on, with the step-cost models read at start."""
        self.advice = AdviceBook(kept, self.settings.alerts.sustained_s)

    def group_advice(self) -> dict[str, Advice]:
        """Fleet mode: each group's advice from its members' pooled per-position rates."""
        from tui.advice.fleet import group_advices
        from tui.fleet.poller import FleetReading

        fleet = [reading for reading in self.readings.values() if isinstance(reading, FleetReading)]
        return {} if self.advice is None or not fleet else group_advices(fleet, self.advice.kept)

    def set_config_facts(self, name: str, facts: ConfigFacts) -> None:
        """What the endpoint's config file says now (its k, its settings digest), for the advisor."""
        if self.advice is not None:
            self.advice.facts[name] = facts

    def add_log_line(
        self, name: str, time: float, line: str, events: Iterable[object], failed_lines: int = 0
    ) -> tuple[LogEntry, list[Alert]]:
        self.ensure_endpoint(name)
        if failed_lines:
            self.log_failed_lines[name] = failed_lines
        events = list(events)
        entry = LogEntry(time, line, log_kind(events))
        self.logs.setdefault(name, deque(maxlen=LOG_LINES_KEPT)).append(entry)
        return entry, self.add_log_events(name, time, events)

    def add_log_events(self, name: str, time: float, events: Iterable[object]) -> list[Alert]:
        """Events without a line of their own (a traceback completed when the log went quiet)."""
        self.ensure_endpoint(name)
        return [alert for event in events for alert in self.alerts.observe_log_event(name, time, event)]

    def end_restart(self, name: str, time: float, ok: bool, detail: str) -> list[Alert]:
        """A planned restart is over; a failed one of an endpoint that is down raises "endpoint down"."""
        return self.alerts.end_restart(name, time, ok, detail)

    def add_gpus(self, update: GpusPolled) -> Applied:
        """One GPU poll: each endpoint's GPUs and their series; the memory-with-speculation alert."""
        self.gpu_shared = update.shared
        seen: set[str] = set()
        changes: list[Alert] = []
        for name, view in update.views.items():
            self.ensure_endpoint(name)
            self.gpus[name] = view
            for gpu in view.gpus:
                if gpu.key not in seen:
                    seen.add(gpu.key)
                    self.gpu_history.add_sample(update.time, gpu, cached=view.source != "NVML")
            condition = memory_high_with_speculation(view.gpus, self.speculation_on(name))
            message = None if condition is None else condition.message
            changes += self.alerts.observe_condition(name, "gpu_memory_high", update.time, message)
        return Applied(changed=tuple(update.views), alerts=changes)

    def speculation_on(self, name: str) -> bool | None:
        """True once the figures showed drafting since the endpoint was last up; None, never False."""
        return True if self.drafting.get(name) else None

    def _note_drafting(self, reading: EndpointReading) -> None:
        if not reading.up:
            self.drafting.pop(reading.name, None)  # a restart may change the config
            return
        figures = reading.figures
        rates = (figures.acceptance_rate, figures.mean_acceptance_length)
        if figures.per_position_acceptance or any(rate is not None for rate in rates):
            self.drafting[reading.name] = True

    def log_entries(self, name: str) -> list[LogEntry]:
        return list(self.logs.get(name, ()))
