"""SpectopApp: the live dashboard (and the replay of a recording).

The state every screen shows lives in a `Board` (plain data). Background work (polling, log
tailing, replay) runs in workers and talks to the app through messages from `tui.messages`;
the app updates the board and tells the screens with `EndpointUpdated`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import aiofiles
import httpx
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from tui.board import Board, LogEntry
from tui.messages import (
    EndpointUpdated,
    HealthChecked,
    LogLineReceived,
    ReadingReceived,
    ReplayFinished,
    RestartExited,
    RestartStarted,
)
from tui.quitting import QUIT_BINDINGS, AsksBeforeQuitting
from tui.sanitize import safe_line
from tui.settings import EndpointSettings, Settings
from tui.telemetry.alerts import Alert, AlertEngine
from tui.telemetry.history import History, ReadingLike
from tui.telemetry.recording import (
    DEFAULT_MAX_MB,
    HeaderRecord,
    LogRecord,
    ReadingRecord,
    RecordingError,
    RecordingWriter,
    ReplayClock,
    replay,
)
from tui.themes import (
    DEFAULT_THEME,
    honour_no_color,
    load_themes,
    next_theme,
    remember_theme,
    remembered_theme,
)
from tui.widgets.card_view import CardData
from tui.worker_errors import WritesRecoveryCopies, report_worker_failure

MAX_LOG_LINE_CHARS = 2000
LOG_POLL_INTERVAL_S = 1.0  # how often each log file is checked for new lines
REPLAY_SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
MAX_REPORTED_BAD_LINES = 5


HTTP_MAX_CONNECTIONS = 160  # a 64 + 64 stream A/B burst plus the dashboard's scrapes


class SpectopApp(AsksBeforeQuitting, WritesRecoveryCopies, App[int]):
    TITLE = "spectop"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("t", "next_theme", "Theme"),
        Binding("s", "screenshot", "Shot"),
        Binding("a", "alerts", "Alerts"),
        Binding("b", "bench", "Bench"),
        Binding("plus", "faster", "Faster", key_display="+"),
        Binding("minus", "slower", "Slower", key_display="-"),
        *QUIT_BINDINGS,
    ]
    intro: str | None = None  # a line the dashboard shows until the first key (`spectop demo`'s story)

    def __init__(
        self,
        settings: Settings,
        *,
        record_path: str | os.PathLike[str] | None = None,
        record_max_mb: float = DEFAULT_MAX_MB,
        replay_path: str | os.PathLike[str] | None = None,
        replay_speed: float = 1.0,
        clock: Callable[[], float] = time.time,
        theme_folders: list[Path] | None = None,
        remember_theme_choice: bool = True,
    ) -> None:
        super().__init__()
        honour_no_color(self)
        self.settings = settings
        self.board = Board(settings)
        self.record_path = Path(record_path) if record_path else None
        self.record_max_mb = record_max_mb
        self.replay_path = Path(replay_path) if replay_path else None
        self.replay_clock = ReplayClock(replay_speed) if self.replay_path else None
        self._wall_clock = clock
        self._restarting: str | None = None  # the endpoint of a planned restart under way
        self._theme_folders = theme_folders
        self._remember_theme_choice = remember_theme_choice
        self.paused = False
        self.replay_done = False
        self.http_client: httpx.AsyncClient  # created on mount (timeouts, limits), closed on unmount
        self.theme_names: list[str] = []
        self._monitors: list[tuple[EndpointSettings, Any]] = []
        self._polling: set[str] = set()
        self._recorder: RecordingWriter | None = None
        self._bad_replay_lines = 0

    # The board's state, under the names screens and tests use.
    @property
    def endpoints(self) -> list[EndpointSettings]:
        return self.board.endpoints

    @property
    def readings(self) -> dict[str, ReadingLike]:
        return self.board.readings

    @property
    def history(self) -> History:
        return self.board.history

    @property
    def alerts(self) -> AlertEngine:
        return self.board.alerts

    @property
    def alerts_version(self) -> int:
        return self.board.alerts_version

    # --- life cycle ---------------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        from tui.screens.dashboard import DashboardScreen

        return DashboardScreen()

    async def on_mount(self) -> None:
        self._load_themes()
        from tui.bench.transport import ShardedTransport

        # One client for the app: scrapes, health checks and A/B bursts. Sharded pools keep a
        # burst's many concurrent streams from queueing inside httpx (see tui/bench/transport.py).
        self.http_client = httpx.AsyncClient(
            transport=ShardedTransport(HTTP_MAX_CONNECTIONS),
            timeout=httpx.Timeout(5.0, connect=2.0),
            follow_redirects=False,
        )
        if self.replay_path is not None:
            self.run_worker(self._replay(self.replay_path), name="replay", group="replay")
        else:
            await self._start_live()
        self._update_subtitle()

    async def _start_live(self) -> None:
        if self.record_path is not None:
            self._recorder = RecordingWriter(
                self.record_path,
                max_bytes=int(self.record_max_mb * 1024 * 1024),  # 0: no cap
                on_rotate=lambda rotated: self.notify(f"recording rotated to {rotated}", timeout=8),
            )
            try:
                await self._recorder.open(self.board.recorded_endpoints(), now=self._wall_clock())
            except OSError as error:
                self.notify(f"cannot record to {self.record_path}: {error}", severity="error", timeout=10)
                self._recorder = None
        try:
            from tui.telemetry.monitor import EndpointMonitor
        except ImportError:
            self.notify("metrics polling is not available in this build", severity="error")
        else:
            self._monitors = [
                (endpoint, EndpointMonitor(endpoint, self.settings.window_s)) for endpoint in self.endpoints
            ]
        for endpoint in self.endpoints:
            if endpoint.config_file is not None and endpoint.acceptance_threshold is None:
                self.run_worker(self._read_threshold(endpoint), name=f"threshold {endpoint.name}")
            if endpoint.log_file is not None:
                self.run_worker(
                    self._tail(endpoint), name=f"tail {endpoint.name}", group="tail", exit_on_error=False
                )
        self.set_interval(self.settings.poll_interval_s, self._poll_tick)
        self._poll_tick()

    async def on_unmount(self) -> None:
        self.workers.cancel_all()
        if hasattr(self, "http_client"):
            await self.http_client.aclose()
        if self._recorder is not None:
            await self._recorder.close()

    # --- polling, tailing, replay (workers) ----------------------------------------------------------------

    def _poll_tick(self) -> None:
        """Timer callback: only starts a worker. An endpoint still being polled skips this tick."""
        if self.paused:
            return
        now = time.monotonic()
        due = [
            (endpoint.name, monitor)
            for endpoint, monitor in self._monitors
            if endpoint.name not in self._polling and monitor.due(now)
        ]
        if not due:
            return
        self._polling.update(name for name, _ in due)
        # One worker per tick for every due endpoint (not one per endpoint): a slow endpoint only
        # holds back itself, since the next tick's worker skips just the endpoints still in flight.
        self.run_worker(self._poll_all(due), name="poll", group="poll", exclusive=False, exit_on_error=False)

    async def _poll_all(self, due: list[tuple[str, Any]]) -> None:
        polls = (self._poll(name, monitor) for name, monitor in due)
        results = await asyncio.gather(*polls, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception):
                raise result  # reported once, in on_worker_state_changed

    async def _poll(self, name: str, monitor: Any) -> None:
        try:
            reading = await monitor.poll(self.http_client)
            if self._recorder is not None:
                await self._recorder.write_reading(reading)
            self.post_message(ReadingReceived(reading))
        finally:
            self._polling.discard(name)

    async def _tail(self, endpoint: EndpointSettings) -> None:
        from tui.telemetry.logs import LogParser
        from tui.telemetry.tailer import LogTailer

        assert endpoint.log_file is not None
        backend = endpoint.backend if endpoint.backend in ("vllm", "sglang", "llamacpp") else None
        parser = LogParser(backend=backend)
        async for raw_line in LogTailer(endpoint.log_file, poll_interval_s=LOG_POLL_INTERVAL_S).lines():
            line = raw_line.rstrip("\r\n")[:MAX_LOG_LINE_CHARS]
            events = parser.feed(line)
            now = self._wall_clock()
            if self._recorder is not None:
                for event in events:
                    await self._recorder.write_log_event(endpoint.name, now, event)
            self.post_message(LogLineReceived(endpoint.name, now, line, list(events)))

    def reread_thresholds(self) -> None:
        """After the config editor closes: a saved `acceptance_threshold` applies at once."""
        if self.replay_clock is not None:
            return
        for endpoint in self.endpoints:
            if endpoint.config_file is not None and endpoint.acceptance_threshold is None:
                self.run_worker(self._read_threshold(endpoint), name=f"threshold {endpoint.name}")

    async def _read_threshold(self, endpoint: EndpointSettings) -> None:
        try:
            from tui.configs import read_acceptance_threshold  # type: ignore[attr-defined]
        except ImportError:
            return
        assert endpoint.config_file is not None
        threshold = await asyncio.to_thread(read_acceptance_threshold, endpoint.config_file)
        wanted = threshold if threshold is not None else self.alerts.rules.acceptance_warning
        if self.alerts.threshold(endpoint.name) != wanted:
            self.board.set_threshold(endpoint.name, threshold)  # None: back to the settings' value
            self._broadcast(EndpointUpdated(endpoint.name))

    async def _replay(self, path: Path) -> None:
        assert self.replay_clock is not None
        async for record in replay(path, self.replay_clock, on_error=self._report_bad_line):
            if isinstance(record, HeaderRecord):
                for recorded in record.endpoints:
                    if self.board.ensure_endpoint(recorded.name, recorded):
                        self._broadcast(EndpointUpdated(recorded.name))
            elif isinstance(record, ReadingRecord):
                self.post_message(ReadingReceived(record))
            elif isinstance(record, LogRecord):
                event = record.event
                self.post_message(LogLineReceived(record.endpoint, record.time, event.line, [event]))
        self.post_message(ReplayFinished())

    def _report_bad_line(self, error: RecordingError) -> None:
        self._bad_replay_lines += 1
        if self._bad_replay_lines <= MAX_REPORTED_BAD_LINES:
            self.notify(
                safe_line(str(error)), title="skipped a bad line", severity="warning", timeout=8, markup=False
            )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures are reported; the app keeps running."""
        worker = event.worker
        if event.state == WorkerState.ERROR:
            report_worker_failure(self, worker)
        elif event.state == WorkerState.SUCCESS and worker.group == "tail":
            self.notify(f"{worker.name}: log tailing ended", severity="warning")

    # --- state updates (handlers: no network, no waiting) ---------------------------------------------------

    def on_reading_received(self, message: ReadingReceived) -> None:
        reading: ReadingLike = message.reading  # type: ignore[assignment]
        self._announce(self.board.add_reading(reading))
        self._broadcast(EndpointUpdated(reading.name))

    def on_log_line_received(self, message: LogLineReceived) -> None:
        name = message.endpoint
        entry, changes = self.board.add_log_line(name, message.time, message.line, message.events)
        self._announce(changes)
        self._broadcast(EndpointUpdated(name, log_line=entry))
        if changes:
            self._broadcast(EndpointUpdated(name))

    def on_replay_finished(self, _message: ReplayFinished) -> None:
        self.replay_done = True
        self._update_subtitle()
        for endpoint in self.endpoints:
            self._broadcast(EndpointUpdated(endpoint.name))
        self.notify("end of recording", timeout=4)

    # A planned restart (save & restart in the config editor): "restarting", and "down" only if it fails.
    def on_restart_started(self, message: RestartStarted) -> None:
        self._restarting = next(
            (e.name for e in self.endpoints if message.health_url == f"{e.url}/health"), None
        )
        if self._restarting is not None:
            self.alerts.begin_restart(self._restarting, self._wall_clock())
            self._broadcast(EndpointUpdated(self._restarting))

    def on_restart_exited(self, message: RestartExited) -> None:
        if message.returncode is None:
            self._end_restart(False, f"could not run the command: {message.detail}")
        elif message.returncode != 0:
            self._end_restart(False, f"the command exited with {message.returncode}")

    def on_health_checked(self, message: HealthChecked) -> None:
        if message.back:
            self._end_restart(True, "")
        elif message.elapsed_s < 0:
            self._end_restart(False, f"/health did not answer: {message.detail}")

    def _end_restart(self, ok: bool, detail: str) -> None:
        name, self._restarting = self._restarting, None
        if name is not None:
            self._announce(self.board.end_restart(name, self._wall_clock(), ok, detail))
            self._broadcast(EndpointUpdated(name))

    def _announce(self, changes: list[Alert]) -> None:
        if changes:
            self._update_subtitle()
        if self.replay_clock is not None:
            return  # a replay shows alerts as badges only: a burst of old toasts would bury the screen
        for alert in changes:
            if alert.active:
                severity = "error" if alert.severity == "critical" else "warning"
                message, title = safe_line(alert.message), safe_line(alert.endpoint)
                self.notify(message, title=title, severity=severity, timeout=6, markup=False)

    def _broadcast(self, message: EndpointUpdated) -> None:
        """Tell the screens; log lines only go to screens that show a log (most lines change nothing else)."""
        for screen in self.screen_stack:
            if message.log_line is None or getattr(screen, "SHOWS_LOG_LINES", False):
                screen.post_message(EndpointUpdated(message.endpoint, message.log_line))

    # --- what screens read ----------------------------------------------------------------------------------

    def now(self) -> float | None:
        """Wall time, or the recording's time during a replay (so ages are those of the recording)."""
        if self.replay_clock is not None:
            return self.replay_clock.now
        return self._wall_clock()

    def endpoint(self, name: str) -> EndpointSettings | None:
        return self.board.endpoint(name)

    def card_data(self, name: str) -> CardData:
        endpoint = self.endpoint(name)
        reading = self.readings.get(name)
        return CardData(
            name=name,
            backend=endpoint.backend if endpoint and endpoint.backend != "auto" else None,
            model=endpoint.model if endpoint else None,
            reading=reading,
            history=self.history.endpoint(name),
            alerts=self.alerts.active(name),
            now=self.now(),
            stale_after_s=max(10.0, 3 * self.settings.poll_interval_s),
            threshold=self.alerts.threshold(name),
            critical=self.alerts.rules.acceptance_critical,
            window_s=self.settings.window_s,
            restarting=self.alerts.restarting(name),
        )

    def log_entries(self, name: str) -> list[LogEntry]:
        return self.board.log_entries(name)

    # --- actions --------------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("faster", "slower"):
            return self.replay_clock is not None
        if action == "bench":
            return self.replay_clock is None
        return True

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_alerts(self) -> None:
        from tui.screens.alerts import AlertsScreen

        if not isinstance(self.screen, AlertsScreen):
            self.push_screen(AlertsScreen())

    def action_toggle_pause(self) -> None:
        if self.replay_clock is not None:
            self.replay_clock.paused = not self.replay_clock.paused
            self.paused = self.replay_clock.paused
        else:
            self.paused = not self.paused
        self._update_subtitle()
        self.notify("paused" if self.paused else "resumed", timeout=2)

    def action_faster(self) -> None:
        self._change_speed(+1)

    def action_slower(self) -> None:
        self._change_speed(-1)

    def _change_speed(self, step: int) -> None:
        if self.replay_clock is None:
            return
        speeds = list(REPLAY_SPEEDS)
        current = min(speeds, key=lambda speed: abs(speed - self.replay_clock.speed))  # type: ignore[union-attr]
        index = max(0, min(len(speeds) - 1, speeds.index(current) + step))
        self.replay_clock.speed = speeds[index]
        self._update_subtitle()

    def action_next_theme(self) -> None:
        self.theme = next_theme(self.theme, self.theme_names)
        self.notify(f"theme: {self.theme}", timeout=2)

    def _theme_changed(self, theme: Any) -> None:
        """Any theme change (t, or the palette's theme picker) is remembered for the next run."""
        if self._remember_theme_choice and self.is_running and theme.name != self._saved_theme:
            self._saved_theme = theme.name
            self.run_worker(self._save_theme_choice(theme.name), name="remember theme")

    async def _save_theme_choice(self, name: str) -> None:
        problem = await asyncio.to_thread(remember_theme, name)
        if problem:
            self.notify(problem, severity="warning")

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        svg = self.export_screenshot()
        stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(self._wall_clock()))
        target = Path(path or os.getcwd()) / (filename or f"spectop_screenshot_{stamp}.svg")
        self.run_worker(self._write_screenshot(target, svg), name="screenshot")

    async def _write_screenshot(self, target: Path, svg: str) -> None:
        try:
            async with aiofiles.open(target, "w", encoding="utf-8") as file:
                await file.write(svg)
        except OSError as error:
            self.notify(f"screenshot not saved: {error}", severity="error")
            return
        self.notify(f"screenshot saved: {target}", timeout=8)

    def action_bench(self) -> None:
        try:
            from tui.screens.bench import BenchScreen  # type: ignore[import-not-found]
        except ImportError:
            self.notify("the A/B bench screen is not available in this build", severity="warning")
            return
        if self.replay_clock is not None:
            self.notify("the bench needs live endpoints, not a replay", severity="warning")
            return
        # The endpoint in view (focused card, or the detail screen's) is side A.
        in_view = getattr(self.screen.focused, "endpoint", None) or getattr(self.screen, "endpoint", None)
        default_a = in_view if isinstance(in_view, str) else None
        self.push_screen(BenchScreen(self.endpoints, default_a=default_a))

    def open_editor(self, name: str) -> None:
        endpoint = self.endpoint(name)
        if endpoint is None or endpoint.config_file is None:
            self.notify(f"{name}: no config_file in the settings, nothing to edit", severity="warning")
            return
        try:
            from tui.screens.editor import EditorScreen  # type: ignore[import-not-found]
        except ImportError:
            self.notify("the config editor is not available in this build", severity="warning")
            return
        self.push_screen(
            EditorScreen(
                endpoint.config_file,
                restart_command=endpoint.restart_command,
                health_url=f"{endpoint.url}/health",
                log_file=endpoint.log_file,
            )
        )

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title != "Screenshot":  # ours (below) saves into the current folder
                yield command
        commands = [
            ("Pause / resume", "Stop or restart polling (or the replay)", "app.toggle_pause"),
            ("Help", "All keys", "app.help"),
            ("Alerts", "Active and past alerts with their times", "app.alerts"),
            ("Next theme", "Cycle through the spectop themes (remembered)", "app.next_theme"),
            ("Screenshot", "Save an SVG of the screen into the current folder", "app.screenshot"),
            ("Bench", "A/B burst bench between two endpoints", "app.bench"),
            ("Detail", "Open the focused endpoint's detail screen", "screen.open_detail"),
            ("Edit config", "Edit the focused endpoint's config file", "screen.edit"),
            ("Filter", "Filter the cards (or the log on the detail screen)", "screen.filter"),
        ]
        for title, help_text, action in commands:
            yield SystemCommand(title, help_text, partial(self.run_action, action))

    # --- themes and header ----------------------------------------------------------------------------------

    def _load_themes(self) -> None:
        folders = self._theme_folders
        loaded = load_themes(folders) if folders is not None else load_themes()
        for problem in loaded.problems:
            self.notify(problem, title="theme skipped", severity="warning", timeout=10)
        for theme in loaded.themes.values():
            self.register_theme(theme)
        self.theme_names = sorted(loaded.themes)
        wanted = remembered_theme() if self._remember_theme_choice else None
        for choice in (wanted, DEFAULT_THEME):
            if choice and choice in self.available_themes:
                self.theme = choice
                break
        self._saved_theme = wanted or self.theme
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def _update_subtitle(self) -> None:
        parts = []
        if self.replay_path is not None:
            parts.append(f"replay {self.replay_path.name} ×{self.replay_clock.speed:g}")  # type: ignore[union-attr]
            if self.replay_done:
                parts.append("ended")
        else:
            parts.append(f"every {self.settings.poll_interval_s:g}s")
            if self._recorder is not None:
                parts.append("recording")
        if self.paused:
            parts.append("PAUSED")
        active = len(self.alerts.active())
        if active:
            parts.append(f"{active} alert{'s' if active > 1 else ''} (a)")
        self.sub_title = " · ".join(parts)
