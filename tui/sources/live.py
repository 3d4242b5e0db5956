"""`LiveSource`: endpoints polled, logs followed, both recorded when asked; a failing task is said once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import httpx

from tui.bench.transport import ShardedTransport
from tui.configs import read_acceptance_threshold
from tui.format import fmt_setting
from tui.gpu.monitor import GpuMonitor
from tui.settings import EndpointSettings, Settings
from tui.sources.base import Source, WallClock
from tui.sources.updates import GpusPolled, LogLineArrived, Notice, ReadingArrived, ThresholdRead, Update
from tui.telemetry.monitor import EndpointMonitor
from tui.telemetry.recording import (
    DEFAULT_MAX_MB,
    GuardLogRecord,
    RecordedEndpoint,
    RecordingError,
    RecordingWriter,
    describe_os_error,
)

log = logging.getLogger(__name__)

HTTP_MAX_CONNECTIONS = 160  # a 64 + 64 stream A/B burst plus the dashboard's scrapes
LOG_POLL_INTERVAL_S = 1.0  # how often each log file is checked for new lines (inotify wakes it on rotation)
LOG_QUIET_S = 2.0  # a log quiet this long has its parser flushed (an open traceback becomes an event)
LOG_BACKENDS = ("vllm", "sglang", "llamacpp")


def shared_client() -> httpx.AsyncClient:
    """One client for the app; sharded pools keep a burst's streams from queueing inside httpx."""
    return httpx.AsyncClient(
        transport=ShardedTransport(HTTP_MAX_CONNECTIONS, tls_at_first_request=True),  # not before a frame
        timeout=httpx.Timeout(5.0, connect=2.0),
        follow_redirects=False,
    )


class LiveSource(Source):
    allows_bench: ClassVar[bool] = True
    allows_editing: ClassVar[bool] = True
    toasts_alerts: ClassVar[bool] = True

    def __init__(
        self,
        settings: Settings,
        *,
        record_path: str | os.PathLike[str] | None = None,
        record_max_mb: float = DEFAULT_MAX_MB,
        clock: Callable[[], float] = time.time,
        http_client: httpx.AsyncClient | None = None,
        log_poll_interval_s: float = LOG_POLL_INTERVAL_S,
        log_quiet_s: float = LOG_QUIET_S,
    ) -> None:
        self.settings = settings
        self.endpoints = list(settings.endpoints)
        self._wall_clock = WallClock(clock)
        self.clock = self._wall_clock
        self.record_path = Path(record_path) if record_path else None
        self.record_max_mb = record_max_mb
        self.recorder: RecordingWriter | None = None
        self.recording_error: str | None = None  # why the recording stopped (it fails alone, said once)
        self.close_errors: list[str] = []
        self._own_client = http_client is None
        self._client = http_client if http_client is not None else shared_client()
        self.http_client = self._client
        self.log_poll_interval_s = log_poll_interval_s
        self.log_quiet_s = log_quiet_s
        self.monitors = [
            (endpoint, EndpointMonitor(endpoint, settings.window_s)) for endpoint in self.endpoints
        ]
        self.gpu_monitor = GpuMonitor(self.endpoints, self._client, history_s=settings.history_s)
        self._gpu_polling = False
        self._polling: set[str] = set()
        self._queue: asyncio.Queue[Update] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._started = False
        self._running = False
        self._closed = False

    async def start(self) -> None:
        if not self._started:
            self._started = True
            await self._open_recorder()

    async def updates(self) -> AsyncIterator[Update]:
        await self.start()
        self._running = True
        self._spawn("poll ticks", self._tick_forever())
        for endpoint in self.endpoints:
            if endpoint.log_file is not None:
                self._spawn(f"tail {endpoint.name}", self._tail(endpoint, endpoint.log_file))
        self.reread_thresholds()
        try:
            while True:
                yield await self._queue.get()
        finally:
            self._running = False
            self._cancel_tasks()

    def _put(self, update: Update) -> None:
        self._queue.put_nowait(update)

    def _spawn(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(self._guarded(name, work), name=f"spectop {name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug in one task: said once, logged, the others go on
            log.exception("%s failed", name)
            self._put(Notice(f"{name} failed: {error}", "error", timeout_s=10))

    def _cancel_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def _tick_forever(self) -> None:
        while True:
            self.poll_due()
            self.poll_gpus_due()
            await asyncio.sleep(self.settings.poll_interval_s)

    def poll_due(self) -> None:
        """Start one task for every endpoint that is due; one still in flight skips this tick."""
        if self.paused:
            return
        now = time.monotonic()
        due = [
            (endpoint.name, monitor)
            for endpoint, monitor in self.monitors
            if endpoint.name not in self._polling and monitor.due(now)
        ]
        if not due:
            return
        self._polling.update(name for name, _ in due)
        self._spawn("poll", self._poll_all(due))

    async def _poll_all(self, due: list[tuple[str, EndpointMonitor]]) -> None:
        results = await asyncio.gather(
            *(self._poll(name, monitor) for name, monitor in due), return_exceptions=True
        )
        for result in results:
            if isinstance(result, Exception):
                raise result  # said once, by _guarded

    async def _poll(self, name: str, monitor: EndpointMonitor) -> None:
        try:
            reading = await monitor.poll(self._client)
            self._put(ReadingArrived(reading))  # published first: a recording that fails must not hold it
            await self._record(lambda recorder: recorder.write_reading(reading))
        finally:
            self._polling.discard(name)

    def poll_gpus_due(self) -> None:
        if self.paused or self._gpu_polling:
            return
        self._gpu_polling = True
        self._spawn("GPU poll", self._poll_gpus())

    async def _poll_gpus(self) -> None:
        try:
            views = await self.gpu_monitor.poll()  # never raises: a failing source is its reason
            self._put(GpusPolled(self._wall_clock.time(), views, frozenset(self.gpu_monitor.shared_keys())))
        finally:
            self._gpu_polling = False

    async def _tail(self, endpoint: EndpointSettings, path: Path) -> None:
        from tui.telemetry.logs import LogParser  # the log grammars: only for endpoints with a log file
        from tui.telemetry.logs.follow import follow_events

        parser = LogParser(backend=endpoint.backend if endpoint.backend in LOG_BACKENDS else None)
        follow = follow_events(
            path, parser, poll_interval_s=self.log_poll_interval_s, idle_flush_s=self.log_quiet_s
        )
        async for line, events in follow:
            now = self._wall_clock.time()
            self._put(LogLineArrived(endpoint.name, now, line, list(events), parser.failed_lines))
            for event in events:
                await self._record(partial(_write_event, name=endpoint.name, time=now, event=event))
        self._put(Notice(f"tail {endpoint.name}: log tailing ended", "warning", timeout_s=5))

    def reread_thresholds(self) -> None:
        if not self._running:
            return
        for endpoint in self.endpoints:
            if endpoint.config_file is not None and endpoint.acceptance_threshold is None:
                self._spawn(
                    f"threshold {endpoint.name}", self._read_threshold(endpoint.name, endpoint.config_file)
                )

    async def _read_threshold(self, name: str, config_file: Path) -> None:
        threshold = await asyncio.to_thread(read_acceptance_threshold, config_file)
        self._put(ThresholdRead(name, threshold))

    async def _open_recorder(self) -> None:
        if self.record_path is None:
            return
        path = self.record_path
        recorder = RecordingWriter(
            path,
            max_bytes=int(self.record_max_mb * 1024 * 1024),  # 0: no cap
            on_rotate=lambda rotated: self._put(Notice(f"recording rotated to {rotated}")),
        )
        try:
            await recorder.open(self.recorded_endpoints(), now=self._wall_clock.time())
        except OSError as error:
            self._put(Notice(f"cannot record to {path}: {error}", "error", timeout_s=10))
            return
        self.recorder = recorder

    async def record_guard(self, record: GuardLogRecord) -> None:
        await self._record(lambda recorder: recorder.write_guard(record))

    async def _record(self, write: Callable[[RecordingWriter], Awaitable[None]]) -> None:
        """One write to the recording; a failing recording stops alone, said once."""
        recorder = self.recorder
        if recorder is None:
            return
        try:
            await write(recorder)
        except (OSError, RecordingError) as error:
            await self._recording_failed(recorder, error)

    async def _recording_failed(self, recorder: RecordingWriter, error: BaseException) -> None:
        if self.recorder is not recorder:
            return  # said already
        self.recorder = None
        self.recording_error = f"recording to {recorder.path} stopped: {describe_os_error(error)}"
        self._put(Notice(f"{self.recording_error}; the dashboard goes on", "error", timeout_s=30))
        with contextlib.suppress(OSError):  # what is buffered cannot be written either
            await recorder.abandon()

    def recorded_endpoints(self) -> list[RecordedEndpoint]:
        return [
            RecordedEndpoint.model_validate(endpoint, from_attributes=True) for endpoint in self.endpoints
        ]

    def status(self) -> list[str]:
        parts = [f"every {fmt_setting(self.settings.poll_interval_s)}s"]
        if self.recorder is not None:
            parts.append("recording")
        elif self.recording_error is not None:
            parts.append("recording FAILED")
        return parts

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._cancel_tasks()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.recorder is not None:
            recorder = self.recorder
            try:
                await recorder.close()
            except (OSError, RecordingError) as error:  # the last batch: said on stderr, no traceback
                await self._recording_failed(recorder, error)
                self.close_errors.append(self.recording_error or str(error))
        self.gpu_monitor.close()
        if self._own_client:
            await self._client.aclose()


def _write_event(recorder: RecordingWriter, *, name: str, time: float, event: Any) -> Awaitable[None]:
    return recorder.write_log_event(name, time, event)
