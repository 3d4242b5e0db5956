"""`FleetSource`: the dashboard fed by Prometheus (`--prometheus URL`): history, then refreshes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import ClassVar

from tui.fleet.poller import FleetPoller, FleetReading, FleetRefresh
from tui.fleet.spread import ImbalanceAlerts, engine_spreads, group_spreads
from tui.format import fmt_setting
from tui.settings import PrometheusSettings, Settings
from tui.sources.base import Source, WallClock
from tui.sources.updates import ImbalanceSeen, Notice, ReadingsArrived, SeriesLoaded, SourceDown, Update
from tui.telemetry.alerts import Alert
from tui.telemetry.figures import Figures

log = logging.getLogger(__name__)

HISTORY_TIMEOUT_S = 30.0  # the start-up range queries may take longer than one refresh's budget
SOURCE_NAME = "Prometheus"  # the "endpoint" of the alert that says Prometheus itself failed


def source_alert_text(url: str, error: str) -> str:
    """ "Prometheus at URL unreachable: connection refused" (or "… failing: HTTP 503")."""
    if error.startswith("Prometheus unreachable: "):
        return f"Prometheus at {url} unreachable: {error.removeprefix('Prometheus unreachable: ')}"
    if error.startswith("Prometheus timeout "):
        return f"Prometheus at {url} unreachable: {error.removeprefix('Prometheus ')}"
    return f"Prometheus at {url} failing: {error.removeprefix('Prometheus').lstrip(': ')}"


def imbalance_messages(alerts: list[Alert]) -> dict[str, str]:
    """One text per instance from the active imbalance alerts (an engine's alert goes to its vLLM)."""
    messages: dict[str, list[str]] = {}
    for alert in alerts:
        instance, _, engine = alert.endpoint.partition(" ")
        text = f"{engine}: {alert.message}" if engine else alert.message
        messages.setdefault(instance, []).append(text)
    return {instance: "; ".join(texts) for instance, texts in messages.items()}


class FleetSource(Source):
    is_fleet: ClassVar[bool] = True

    def __init__(
        self,
        settings: Settings,
        *,
        poller: FleetPoller | None = None,
        clock: Callable[[], float] = time.time,
        load_history: bool = True,
    ) -> None:
        if settings.prometheus is None and poller is None:
            raise ValueError("FleetSource needs settings.prometheus (or a poller)")
        self.settings = settings
        self.prometheus: PrometheusSettings = poller.settings if poller else settings.prometheus  # type: ignore[assignment]
        self.poller = poller or FleetPoller(self.prometheus, settings.window_s)
        self.clock = WallClock(clock)
        self.imbalance = ImbalanceAlerts(settings.alerts.sustained_s)
        self._load_history = load_history
        self._wake = asyncio.Event()
        self._imbalanced: dict[str, str] = {}
        self.error: str | None = None  # Prometheus' own failure at the last refresh
        self._closed = False

    @property
    def group_by(self) -> str:
        return self.prometheus.group_by

    async def updates(self) -> AsyncIterator[Update]:
        loop = asyncio.get_running_loop()
        first: FleetRefresh | None = None
        if self._load_history:
            # With the first refresh: the history of the instances it lists (not of every instance the
            # whole history saw), and before their first readings (series keep their time order).
            refreshed, loaded = await asyncio.gather(self.poller.refresh(), self._history())
            first = refreshed
            if isinstance(loaded, str):
                yield Notice(f"history not loaded: {loaded}", "warning", title="Prometheus", timeout_s=10)
            else:
                listed = {reading.name for reading in refreshed.readings}
                loaded = {name: points for name, points in loaded.items() if name in listed and points}
                if loaded:
                    yield SeriesLoaded(loaded)
        while True:
            started = loop.time()
            if first is not None or not self.paused:
                refresh = first or await self.poller.refresh()  # one at a time: the loop waits for it
                first = None
                for update in self.updates_of(refresh):
                    yield update
            self._wake.clear()
            delay = self.settings.poll_interval_s - (loop.time() - started)
            if delay > 0:
                # Slept the interval (or woken by a resume). Not wait_for: on 3.11 it drops a cancel that
                # lands as the wake-up comes, and the loop would outlive the app.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()

    async def _history(self) -> dict[str, list[tuple[float, Figures]]] | str:
        """The window's figures per instance from query_range, or why not (never raises)."""
        try:
            async with asyncio.timeout(HISTORY_TIMEOUT_S):
                return await self.poller.load_history(self.settings.history_s, self.settings.poll_interval_s)
        except TimeoutError:
            return f"no answer in {fmt_setting(HISTORY_TIMEOUT_S)} s"
        except Exception as error:  # a failed history must not stop the dashboard
            log.exception("loading the fleet history failed")
            return f"{type(error).__name__}: {error}"

    def updates_of(self, refresh: FleetRefresh) -> list[Update]:
        """What one refresh tells the board: source notices, the readings, imbalance alerts."""
        updates: list[Update] = []
        if refresh.error != self.error:
            if refresh.error is not None:
                updates.append(Notice(refresh.error, "error", title="Prometheus DOWN", timeout_s=10))
            else:
                updates.append(Notice("Prometheus answers again", title="Prometheus", timeout_s=5))
            self.error = refresh.error
            text = None if refresh.error is None else source_alert_text(self.prometheus.url, refresh.error)
            updates.append(SourceDown(SOURCE_NAME, refresh.time, text))
        updates.append(ReadingsArrived(tuple(refresh.readings)))
        if refresh.error is None:
            updates += self._imbalance(refresh.time, refresh.readings)
        return updates

    def _imbalance(self, at: float, readings: list[FleetReading]) -> list[Update]:
        spreads = group_spreads(readings)
        for reading in readings:
            if reading.up and reading.engines:
                spreads += engine_spreads(reading)
        self.imbalance.observe(at, spreads)
        now = imbalance_messages(self.imbalance.active())
        updates: list[Update] = []
        for instance in sorted(set(now) | set(self._imbalanced)):
            message = now.get(instance)
            if message != self._imbalanced.get(instance):
                updates.append(ImbalanceSeen(instance, at, message))
                if message is not None and instance not in self._imbalanced:
                    updates.append(Notice(message, "warning", title=f"imbalance: {instance}", timeout_s=8))
        self._imbalanced = now
        return updates

    def toggle_pause(self) -> None:
        super().toggle_pause()
        self._wake.set()

    def status(self) -> list[str]:
        parts = [f"fleet {self.prometheus.url}", f"every {fmt_setting(self.settings.poll_interval_s)}s"]
        if self.error is not None:  # first: the rest may be cut off in 80 columns
            parts.insert(0, f"Prometheus DOWN: {self.error}")
        return parts

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.poller.aclose()
