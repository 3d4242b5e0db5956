"""SpectopApp: the dashboard, fed by one source (live endpoints, or a recording played back).

The app composes: it holds a `Source` (tui/sources) whose updates it applies to the `Board` (plain
data) in a worker, tells the screens with `EndpointUpdated`, binds the keys, and owns themes and
screenshots. Whatever differs between live and replay is a property of the source. Screens are
given what they need (`ScreenContext`) when they are made.
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
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme

from tui.board import Board, LogEntry
from tui.messages import EndpointUpdated, HealthChecked, RestartExited, RestartStarted
from tui.quitting import QUIT_BINDINGS, AsksBeforeQuitting
from tui.sanitize import safe_line, safe_text
from tui.screens.context import EndpointScreen, ScreenContext
from tui.screens.guard import GuardDriver
from tui.settings import EndpointSettings, Settings
from tui.sources import LiveSource, ReplaySource, Source
from tui.sources.updates import Finished, Notice, Update
from tui.telemetry.alerts import Alert, AlertEngine
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import DEFAULT_MAX_MB
from tui.telemetry.series import SeriesStore
from tui.themes import (
    DEFAULT_THEME,
    FOOTER_CSS,
    honour_no_color,
    load_themes,
    next_theme,
    remember_theme,
    remembered_theme,
)
from tui.widgets.card_view import CardData
from tui.worker_errors import ReportsWorkerFailures, WritesRecoveryCopies

YIELD_EVERY = 200  # updates applied in a row at most before the screens get a turn


class SpectopApp(AsksBeforeQuitting, WritesRecoveryCopies, ReportsWorkerFailures, App[int]):
    TITLE = "spectop"
    CSS = FOOTER_CSS
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", tooltip="quit spectop"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="the keys of this screen"),
        Binding("f1", "help", "Help", show=False, tooltip="the keys of this screen"),
        Binding("p", "toggle_pause", "Pause", tooltip="pause / resume"),
        Binding("t", "next_theme", "Theme", show=False, tooltip="next theme (remembered)"),
        Binding("s", "screenshot", "Shot", show=False, tooltip="save an SVG screenshot"),
        Binding("a", "alerts", "Alerts", tooltip="alerts, active and past"),
        Binding("b", "bench", "Bench", tooltip="A/B burst bench"),
        # One footer item for both speed keys (the detail screen's footer is full at 80 columns).
        Binding("plus", "faster", "Speed", key_display="+/-", tooltip="replay faster (+) / slower (-)"),
        Binding("minus", "slower", "", show=False),
        *QUIT_BINDINGS,
    ]

    def __init__(
        self,
        settings: Settings,
        *,
        source: Source | None = None,
        record_path: str | os.PathLike[str] | None = None,
        record_max_mb: float = DEFAULT_MAX_MB,
        replay_path: str | os.PathLike[str] | None = None,
        replay_speed: float = 1.0,
        clock: Callable[[], float] = time.time,
        theme_folders: list[Path] | None = None,
        remember_theme_choice: bool = True,
        intro: str | None = None,
    ) -> None:
        """`source` as given, else a replay of `replay_path`, else the live endpoints of `settings`.
        `intro`: a line the dashboard shows until the first key (`spectop demo`'s story)."""
        super().__init__()
        honour_no_color(self)
        self.settings = settings
        self.board = Board(settings)
        if source is None and replay_path is not None:
            source = ReplaySource(Path(replay_path), replay_speed)
        elif source is None:
            source = LiveSource(settings, record_path=record_path, record_max_mb=record_max_mb, clock=clock)
        self.source = source
        self.context = ScreenContext(
            self.board,
            source.clock,
            editable=source.allows_editing,
            open_editor=self.open_editor,
            open_tune=self.open_tune,
            reread_thresholds=source.reread_thresholds,
            intro=intro,
        )
        self._wall_clock = clock
        self._restarting: str | None = None  # the endpoint of a planned restart under way
        self.guard = GuardDriver(  # the fallback guard: `ask` offers a dialog, `auto` switches spec off
            self,
            self.board,
            source,
            clock,
            restarting=lambda name: self._restarting is not None or self.alerts.restarting(name),
            restart_began=lambda health_url: self.on_restart_started(RestartStarted(health_url)),
            restart_ended=self._end_restart,
            changed=self._guard_noted,
        )
        self._theme_folders = theme_folders
        self._remember_theme_choice = remember_theme_choice
        self.theme_names: list[str] = []

    # --- what tests and scripts read ------------------------------------------------------------------------

    @property
    def http_client(self) -> httpx.AsyncClient | None:
        """The source's client (scrapes, health checks after a restart, bursts); None in a replay."""
        return self.source.http_client

    @property
    def readings(self) -> dict[str, EndpointReading]:
        return self.board.readings

    @property
    def series(self) -> SeriesStore:
        return self.board.series

    @property
    def alerts(self) -> AlertEngine:
        return self.board.alerts

    @property
    def replay_done(self) -> bool:
        return self.source.finished

    def card_data(self, name: str) -> CardData:
        return self.context.card_data(name)

    def log_entries(self, name: str) -> list[LogEntry]:
        return self.board.log_entries(name)

    # --- life cycle -----------------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        from tui.screens.dashboard import DashboardScreen
        from tui.sources.fleet import FleetSource

        if isinstance(self.source, FleetSource):  # fleet mode: the instances' table when cards do not fit
            from tui.widgets.fleet_table import FleetTable

            return DashboardScreen(self.context, table=FleetTable(self.context))
        return DashboardScreen(self.context)

    async def on_mount(self) -> None:
        self._load_themes()
        for note in self.settings.notes:  # what spectop assumed (http:// added to a bare host:port)
            self.notify(safe_text(note), title="settings", timeout=10, markup=False)
        await self.source.start()
        self.run_worker(self._follow_source(), name="source", group="source", exit_on_error=False)
        self._update_subtitle()

    async def on_unmount(self) -> None:
        self.workers.cancel_all()
        await self.source.close()

    async def _follow_source(self) -> None:
        applied = 0
        async for update in self.source.updates():
            self.apply(update)
            applied += 1
            if applied % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # a backlog of updates (a burst of log lines) never starves the screen

    def apply(self, update: Update) -> None:
        """One update of the source: into the board, then the screens and the header are told."""
        if isinstance(update, Notice):
            message, title = safe_text(update.message), safe_line(update.title)
            self.notify(
                message, title=title, severity=update.severity, timeout=update.timeout_s, markup=False
            )
            self._update_subtitle()  # a notice may change what the source says (Prometheus down)
            return
        applied = self.board.apply(update)
        self._announce(applied.alerts)
        if applied.log_line is not None:
            name, entry = applied.log_line
            self._broadcast(EndpointUpdated(name, log_line=entry))
        immediate = isinstance(update, Finished)
        for name in applied.changed:
            self._broadcast(EndpointUpdated(name, immediate=immediate))
        self.guard.watch(applied.changed)
        if immediate:
            self._update_subtitle()
            self.notify("end of recording", timeout=4)

    # --- a planned restart (save & restart in the config editor): "restarting", and "down" if it fails -----

    def on_restart_started(self, message: RestartStarted) -> None:
        self._restarting = next(
            (e.name for e in self.board.endpoints if message.health_url == f"{e.url}/health"), None
        )
        if self._restarting is not None:
            self.alerts.begin_restart(self._restarting, self._wall_clock())
            self.series.endpoint(self._restarting).mark(self._wall_clock(), "config")  # a chart marker
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
        if not self.source.toasts_alerts:
            return
        for alert in changes:
            if alert.active:
                severity: SeverityLevel = "error" if alert.severity == "critical" else "warning"
                message, title = safe_line(alert.message), safe_line(alert.endpoint)
                self.notify(message, title=title, severity=severity, timeout=6, markup=False)

    def _guard_noted(self, name: str) -> None:
        self._update_subtitle()
        self._broadcast(EndpointUpdated(name))  # the alerts screen shows the guard's record

    def _broadcast(self, message: EndpointUpdated) -> None:
        """Tell the screens; log lines only go to screens that show a log (most lines change nothing else)."""
        for screen in self.screen_stack:
            if message.log_line is None or (isinstance(screen, EndpointScreen) and screen.shows_log_lines):
                screen.post_message(
                    EndpointUpdated(message.endpoint, message.log_line, immediate=message.immediate)
                )

    # --- actions --------------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("faster", "slower"):
            return self.source.has_speed
        if action == "bench":
            return self.source.allows_bench
        return True

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_alerts(self) -> None:
        from tui.screens.alerts import AlertsScreen

        if not isinstance(self.screen, AlertsScreen):
            self.push_screen(AlertsScreen(self.board.alerts))

    def action_toggle_pause(self) -> None:
        self.source.toggle_pause()
        self._update_subtitle()
        self.notify("paused" if self.source.paused else "resumed", timeout=2)

    def action_faster(self) -> None:
        self.source.change_speed(+1)
        self._update_subtitle()

    def action_slower(self) -> None:
        self.source.change_speed(-1)
        self._update_subtitle()

    def action_next_theme(self) -> None:
        self.theme = next_theme(self.theme, self.theme_names)
        self.notify(f"theme: {self.theme}", timeout=2)

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
        from tui.screens.bench import BenchScreen

        if not self.source.allows_bench:
            self.notify("the bench needs live endpoints, not a replay", severity="warning")
            return
        screen = self.screen
        default_a = screen.endpoint_in_view if isinstance(screen, EndpointScreen) else None  # side A
        self.push_screen(BenchScreen(self.board.endpoints, default_a=default_a))

    def open_editor(self, name: str) -> None:
        from tui.screens.editor import EditorScreen

        endpoint: EndpointSettings | None = self.board.endpoint(name)
        if endpoint is None or endpoint.config_file is None:
            self.notify(f"{name}: no config_file in the settings, nothing to edit", severity="warning")
            return
        self.push_screen(
            EditorScreen(
                endpoint.config_file,
                restart_command=endpoint.restart_command,
                health_url=f"{endpoint.url}/health",
                log_file=endpoint.log_file,
            )
        )

    def open_tune(self, name: str) -> None:
        """`T`: sweep the endpoint's speculative parameter with restarts (needs its config and restart)."""
        from tui.screens.tune import TuneScreen

        endpoint: EndpointSettings | None = self.board.endpoint(name)
        if endpoint is None or endpoint.config_file is None or not endpoint.restart_command:
            self.notify(f"{name}: tuning needs a config_file and a restart_command", severity="warning")
            return
        self.push_screen(
            TuneScreen(
                endpoint,
                on_finished=lambda _result: self.source.reread_thresholds(),
                client=self.http_client,
            )
        )

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title != "Screenshot":  # ours (below) saves into the current folder
                yield command
        commands = [
            ("Pause / resume", "Stop or restart polling (or the replay)", "app.toggle_pause"),
            ("Help", "The keys of this screen", "app.help"),
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

    def _theme_changed(self, theme: Theme) -> None:
        """Any theme change (t, or the palette's theme picker) is remembered for the next run."""
        if self._remember_theme_choice and self.is_running and theme.name != self._saved_theme:
            self._saved_theme = theme.name
            self.run_worker(self._save_theme_choice(theme.name), name="remember theme")

    async def _save_theme_choice(self, name: str) -> None:
        problem = await asyncio.to_thread(remember_theme, name)
        if problem:
            self.notify(problem, severity="warning")

    def _update_subtitle(self) -> None:
        parts = self.source.status()
        if self.source.paused:
            parts.append("PAUSED")
        active = len(self.alerts.active())
        if active:
            parts.append(f"{active} alert{'s' if active > 1 else ''} (a)")
        self.sub_title = safe_line(" · ".join(parts))  # a source's status may quote its server's error
