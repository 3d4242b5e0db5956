"""SpectopApp: the dashboard, fed by one `Source` (live or replay) whose updates it applies to the `Board`
and tells the screens; it binds the keys and owns themes and screenshots."""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import httpx
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme
from textual.worker import Worker

from tui.advice.live import KeptModels, read_config_facts, read_models
from tui.autopilot.policy import Limits, PilotState
from tui.board import Board, LogEntry
from tui.configs.atomic import write_file
from tui.fit_text import fit_words, subtitle_room
from tui.sanitize import safe_line, safe_text
from tui.screens.context import EndpointScreen, ScreenContext
from tui.screens.dashboard import DashboardScreen
from tui.settings import EndpointSettings, Settings
from tui.sources import LiveSource, ReplaySource, Source
from tui.sources.updates import Finished, Notice, ReadingsArrived, Update
from tui.state import TableChoice, remember_table, remember_theme, remembered_table, remembered_theme
from tui.telemetry.alerts import Alert, AlertEngine
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import DEFAULT_MAX_MB
from tui.telemetry.series import SeriesStore
from tui.ui.base import SpectopBase, app_bindings
from tui.ui.terminal_guard import exit_on_signals, restore_signals
from tui.ui.themes import DEFAULT_THEME, load_themes, next_theme
from tui.widgets.card_view import CardData
from tui.widgets.messages import (
    AutopilotUpdated,
    EndpointsUpdated,
    EndpointUpdated,
    HealthChecked,
    RestartExited,
    RestartStarted,
)

if TYPE_CHECKING:
    from tui.advice.guard_control import GuardController, GuardFacts
    from tui.advice.stepcost import StepCostModel

YIELD_EVERY = 200  # updates applied in a row at most before the screens get a turn
# Fleet mode: once the first refresh is drawn, the objects alive are frozen out of the collector's sight,
# young collections come less often (a refresh makes some 100,000 short-lived objects); undone on exit.
FREEZE_HEAP_AFTER_S = 2.0  # after the first readings were told to the screens
FLEET_GC_THRESHOLD = 50_000
# The guard's imports (a third of spectop's) run in a thread after the first figures, or at the latest.
GUARD_AFTER_FIGURES_S = 2.0
GUARD_AT_THE_LATEST_S = 5.0


# The palette's commands (title, help, action); each shows where its screen has the action.
PALETTE_COMMANDS = (
    ("Pause / resume", "Stop or restart polling (or the replay)", "app.toggle_pause"),
    ("Help", "The keys of this screen", "app.help"),
    ("Alerts", "Active and past alerts with their times", "app.alerts"),
    ("Next theme", "Cycle through the spectop themes (remembered)", "app.next_theme"),
    ("Screenshot", "Save an SVG of the screen into the current folder", "app.screenshot"),
    ("Bench", "A/B burst bench between two endpoints", "app.bench"),
    ("Detail", "Open the focused endpoint's detail screen", "screen.open_detail"),
    ("Demo hints", "What to try in the demo, with the guard's /sim/control URL", "screen.show_intro"),
    ("Edit config", "Edit the focused endpoint's config file", "screen.edit"),
    ("Filter", "Filter the cards (or the log on the detail screen)", "screen.filter"),
    ("Tune", "Sweep the endpoint's k with restarts, recommend and apply (tune screen)", "screen.tune"),
    ("Table view", "Switch between the table of endpoints and the cards", "screen.toggle_view"),
    ("Table columns", "Choose and order the table view's columns (remembered)", "table.choose_columns"),
    (
        "Log viewer",
        "The focused endpoint's log full screen: search, errors, follow, wrap",
        "screen.log_viewer",
    ),
    ("GPUs", "One row per GPU: memory, utilisation, power, temperature, clocks, processes", "screen.gpus"),
)


def fit_parts(parts: list[str], width: int) -> list[str]:
    """The subtitle's parts that fit `width`, whole: the poll interval goes first, never the first or last."""
    kept = list(parts)
    while len(" · ".join(kept)) > width and len(kept) > 2:
        interval = next((index for index, part in enumerate(kept) if part.startswith("every ")), None)
        kept.pop(interval if interval is not None and 0 < interval < len(kept) - 1 else 1)
    return kept


class SpectopApp(SpectopBase[int]):
    TITLE = "spectop"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = app_bindings(
        "quit spectop",
        Binding("p", "toggle_pause", "Pause", tooltip="pause / resume"),
        Binding("t", "next_theme", "Theme", show=False, tooltip="next theme (remembered)"),
        Binding("s", "screenshot", "Shot", show=False, tooltip="save an SVG screenshot"),
        Binding("a", "alerts", "Alerts", tooltip="alerts, active and past"),
        Binding("b", "bench", "Bench", tooltip="A/B burst bench"),
        Binding("o", "autopilot", "Autopilot", show=False, tooltip="autopilot on/off (acts if set to auto)"),
        # One footer item for both speed keys (the detail screen's footer is full at 80 columns).
        Binding("plus", "speed(1)", "Speed", key_display="+/-", tooltip="replay faster (+) / slower (-)"),
        Binding("minus", "speed(-1)", "", show=False),
    )

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
        step_costs: KeptModels | None = None,
        bench_pair: tuple[str, str] | None = None,
        autopilot_limits: Limits | None = None,
    ) -> None:
        """`source` as given, else a replay of `replay_path`, else the live endpoints of `settings`; `intro`:
        the demo's line until the first key; `bench_pair`: the burst screen's A and B."""
        super().__init__()
        self.settings = settings
        self.board = Board(settings)
        if source is None and replay_path is not None:
            source = ReplaySource(Path(replay_path), replay_speed)
        elif source is None:
            source = LiveSource(settings, record_path=record_path, record_max_mb=record_max_mb, clock=clock)
        self.source = source
        self._step_costs = step_costs
        self.context = ScreenContext(
            self.board,
            source.clock,
            editable=source.allows_editing,
            open_editor=self.open_editor,
            open_tune=self.open_tune,
            open_log=self.open_log,
            reread_thresholds=self._reread_configs,
            intro=intro,
            # A small file read before the event loop runs (as the theme's); written from a thread.
            table_choice=remembered_table() if remember_theme_choice else None,
            remember_table=self._remember_table if remember_theme_choice else lambda _choice: None,
        )
        self._wall_clock = clock
        self._restarting: str | None = None  # the endpoint of a planned restart under way
        # The fallback guard (core: every decision), made after the first frame with figures.
        self.guard: GuardController | None = None
        self._guard_timed = False  # the first figures set the guard's timer
        self._guard_started = False
        self._changed: dict[str, None] = {}  # endpoints changed since the screens were last told, in order
        self._whole_poll = False  # those changes hold a whole poll's readings (a fleet refresh): draw now
        self._subtitle_due = False  # alerts changed: the header's count is redrawn once they are all in
        self._heap_frozen = False  # fleet mode: gc.freeze() asked for
        self._gc_thresholds: tuple[int, int, int] | None = None  # the thresholds before, once frozen
        self._remember_theme_choice = remember_theme_choice
        self.bench_pair = bench_pair
        self._autopilot_limits = autopilot_limits or Limits()
        self._autopilot: Worker[None] | None = None  # `o`: one dry-run autopilot per endpoint
        self._autopilot_lines: dict[str, str] = {}
        self._leaving = False  # quitting: the autopilot puts the configs back first
        self._unmounted = False
        # Before the app runs, so that the first CSS parse has the theme's colours.
        self._theme_problems = self._load_themes(theme_folders)

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
        if self.source.is_fleet:  # fleet mode: the instances' table when cards do not fit (imported then)
            from tui.widgets.fleet_table import FleetTable  # not before the first frame (a test)

            return DashboardScreen(self.context, table=FleetTable(self.context.fleet_view()))
        return DashboardScreen(self.context)

    async def on_mount(self) -> None:
        exit_on_signals(self)
        for problem in self._theme_problems:
            self.notify(problem, title="theme skipped", severity="warning", timeout=10)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        for note in self.settings.notes:  # what spectop assumed (http:// added to a bare host:port)
            self.notify(safe_text(note), title="settings", timeout=10, markup=False)
        await self.source.start()
        # The first scrape starts now, not after the advisor's file is read (in a thread, meanwhile).
        self.run_worker(self._follow_source(), name="source", group="source", exit_on_error=False)
        if not isinstance(self.source, ReplaySource):  # the what-if advisor: live figures only
            kept = self._step_costs
            if kept is None:
                kept = await asyncio.to_thread(read_models, None)
            self.board.enable_advice(kept)
            if kept.problem:
                self.notify(safe_line(kept.problem), title="advisor", severity="warning", markup=False)
            self._read_config_facts()
        self._update_subtitle()
        self.set_timer(GUARD_AT_THE_LATEST_S, self._start_guard)

    def _start_guard(self) -> None:
        """The fallback guard, made once the first figures are on screen (its imports are large)."""
        if not self._guard_started:
            self._guard_started = True
            self.run_worker(self._make_guard(), name="guard", group="guard start", exit_on_error=False)

    async def _make_guard(self) -> None:
        await asyncio.to_thread(importlib.import_module, "tui.screens.guard")  # off the event loop
        from tui.advice.guard_control import GuardController  # not before the first frame (a test)
        from tui.screens.guard import DialogPorts  # not before the first frame (a test)

        source, clock = self.source, self._wall_clock
        ports = DialogPorts(
            facts=self._guard_facts,
            run=lambda work, name: self.run_worker(
                work, name=f"guard {name}", group="guard", exit_on_error=False
            ),
            push=lambda dialog, answered: self.push_screen(dialog, callback=answered),
            notify=lambda message, title, severity: self.notify(
                message, title=title, severity=severity, timeout=10, markup=False
            ),
            restart_began=lambda health_url: self.on_restart_started(RestartStarted(health_url)),
            restart_ended=self._end_restart,
            changed=self._guard_noted,
            record_guard=source.record_guard,
        )
        self.guard = GuardController(
            self.board, lambda: source.http_client, clock, ports, enabled=source.allows_editing
        )

    def _reread_configs(self) -> None:
        """After the editor or a tune: thresholds and the advisor's k and settings may have changed."""
        self.source.reread_thresholds()
        self._read_config_facts()

    def _read_config_facts(self) -> None:
        if self.board.advice is not None:
            self.run_worker(self._config_facts(), name="config facts", group="advice", exit_on_error=False)

    async def _config_facts(self) -> None:
        """Each endpoint's k and settings digest from its config file (off the event loop)."""
        for endpoint in self.board.endpoints:
            if endpoint.config_file is not None:
                self.board.set_config_facts(endpoint.name, await read_config_facts(endpoint.config_file))

    async def on_unmount(self) -> None:
        restore_signals(self)
        self._unmounted = True  # a freeze timer that fires after this (a busy host) must not freeze
        if self._gc_thresholds is not None:
            gc.unfreeze()
            gc.set_threshold(*self._gc_thresholds)
        self.workers.cancel_all()
        await self.source.close()

    def _freeze_heap(self) -> None:
        """Fleet mode, the first refresh drawn: see FREEZE_HEAP_AFTER_S."""
        if self._gc_thresholds is None and not self._unmounted:
            self._gc_thresholds = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(FLEET_GC_THRESHOLD, *self._gc_thresholds[1:])

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
        if immediate:
            self._tell_changed()
            for name in applied.changed:
                self._broadcast(EndpointUpdated(name, immediate=True))
        elif applied.changed:
            # A whole poll (a fleet refresh): drawn as soon as told, with the alerts that follow it
            self._whole_poll = self._whole_poll or isinstance(update, ReadingsArrived)
            if not self._changed:
                self.call_later(self._tell_changed)  # when the screens get their turn: all at once
            self._changed.update(dict.fromkeys(applied.changed))
        if self.guard is not None:
            self.guard.watch(applied.changed)
        elif applied.changed and not self._guard_timed:
            self._guard_timed = True
            self.set_timer(GUARD_AFTER_FIGURES_S, self._start_guard)
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
        self._read_config_facts()  # a save & restart or the guard may have changed k
        name, self._restarting = self._restarting, None
        if name is not None:
            self._announce(self.board.end_restart(name, self._wall_clock(), ok, detail))
            self._broadcast(EndpointUpdated(name))

    def _announce(self, changes: list[Alert]) -> None:
        if changes and not self._subtitle_due:
            # Once for a run of updates (a fleet refresh changes an alert per imbalanced replica).
            self._subtitle_due = True
            self.call_later(self._update_subtitle)
        if not self.source.toasts_alerts:
            return
        for alert in changes:
            if alert.active:
                severity: SeverityLevel = "error" if alert.severity == "critical" else "warning"
                message, title = safe_line(alert.message), safe_line(alert.endpoint)
                self.notify(message, title=title, severity=severity, timeout=6, markup=False)

    def _guard_facts(self, endpoint: EndpointSettings) -> GuardFacts:
        """What only the app knows for the guard: a planned restart, and whether the user is editing."""
        from tui.advice.guard_control import GuardFacts  # not before the first frame (a test)
        from tui.screens.editor import EditorScreen  # not before the first frame (a test)
        from tui.screens.tune import TuneScreen  # not before the first frame (a test)

        editing = any(
            (isinstance(screen, TuneScreen) and screen.endpoint.name == endpoint.name)
            or (isinstance(screen, EditorScreen) and screen.path == endpoint.config_file)
            for screen in self.screen_stack
        )
        editing = editing or (self._autopilot is not None and endpoint.autopilot == "auto")  # it acts
        restarting = self._restarting is not None or self.alerts.restarting(endpoint.name)
        return GuardFacts(restarting=restarting, editing=editing)

    def _guard_noted(self, name: str) -> None:
        self._update_subtitle()
        self._broadcast(EndpointUpdated(name))  # the alerts screen shows the guard's record

    def _tell_changed(self) -> None:
        """The endpoints changed since the screens were last told, in one message per screen."""
        if not self._changed:
            return
        changed, self._changed = tuple(self._changed), {}
        immediate, self._whole_poll = self._whole_poll, False
        for screen in self.screen_stack:
            screen.post_message(EndpointsUpdated(changed, immediate=immediate))
        if self.source.is_fleet and not self._heap_frozen:
            self._heap_frozen = True  # when the first refresh is in and drawn
            self.set_timer(FREEZE_HEAP_AFTER_S, self._freeze_heap)

    def _broadcast(self, message: EndpointUpdated) -> None:
        """Tell the screens; log lines only go to screens that show a log (most lines change nothing else)."""
        for screen in self.screen_stack:
            if message.log_line is None or (isinstance(screen, EndpointScreen) and screen.shows_log_lines):
                screen.post_message(
                    EndpointUpdated(message.endpoint, message.log_line, immediate=message.immediate)
                )

    # --- actions --------------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "speed":
            return self.source.has_speed
        if action == "bench":
            return self.source.allows_bench
        if action == "autopilot":  # live figures only, as the advisor
            return not isinstance(self.source, ReplaySource)
        return True

    def open_log(self, name: str) -> None:
        """The endpoint's log file full screen (the log viewer); said why not when it has none."""
        from tui.screens.log_viewer import LogViewerScreen  # not before the first frame (a test)

        endpoint = self.board.endpoint(name)
        log_file = getattr(endpoint, "log_file", None) if endpoint is not None else None
        if log_file is None:
            why = "fleet mode has no logs" if self.board.settings.prometheus is not None else "no log_file"
            self.notify(
                safe_line(f"{name}: {why} (the detail screen shows the log events it has)"), timeout=4
            )
            return
        self.push_screen(LogViewerScreen(Path(log_file), f"{name} · {log_file}"))

    def action_alerts(self) -> None:
        from tui.screens.alerts import AlertsScreen  # not before the first frame (a test)

        if not isinstance(self.screen, AlertsScreen):
            self.push_screen(AlertsScreen(self.board.alerts))

    def action_toggle_pause(self) -> None:
        self.source.toggle_pause()
        self._update_subtitle()
        self.notify("paused" if self.source.paused else "resumed", timeout=2)

    def action_speed(self, step: int) -> None:
        self.source.change_speed(step)
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
            await asyncio.to_thread(write_file, target, svg)
        except OSError as error:
            self.notify(f"screenshot not saved: {error}", severity="error")
            return
        self.notify(f"screenshot saved: {target}", timeout=8)

    def action_bench(self) -> None:
        from tui.screens.bench import BenchScreen  # not before the first frame (a test)

        client = self.http_client  # a replay has none (and no `b`: check_action)
        if client is None:
            self.notify("the bench needs the live source's http client", severity="warning")
            return
        screen = self.screen
        in_view = screen.endpoint_in_view if isinstance(screen, EndpointScreen) else None  # side A
        default_a, default_b = self.bench_pair or (in_view, None)
        self.push_screen(BenchScreen(self.board.endpoints, client, default_a=default_a, default_b=default_b))

    def action_autopilot(self) -> None:
        """`o`: the autopilot on each endpoint: it acts where spectop.toml says `autopilot = "auto"`, else
        proposes (a dry run); `o` again or quitting leaves each file as found or last verified."""
        from tui.autopilot import audit_file
        from tui.autopilot.loop import pilot_endpoints  # lazy: the advisor's modules

        if self._autopilot is not None:
            self._autopilot.cancel()
            self._autopilot, self._autopilot_lines = None, {}
            self._tell_autopilot()
            self.notify("autopilot off", timeout=2)
            return
        client = self.http_client
        if self.source.is_fleet or client is None or self.board.advice is None:
            why = (
                "a fleet's runs as spectop autopilot --prometheus URL with its templates"
                if self.source.is_fleet
                else "the advisor has not read its step-cost models yet"
            )
            self.notify(f"no autopilot here: {why}", severity="warning")
            return
        work = pilot_endpoints(
            self.board.endpoints, client, self.board.advice.kept, self._autopilot_limits,
            audit_path=audit_file(), on_state=self._autopilot_state,
            say=self._autopilot_said,
        )  # fmt: skip
        self._autopilot = self.run_worker(work, name="autopilot", group="autopilot", exit_on_error=False)
        acting = [e.name for e in self.board.endpoints if e.autopilot == "auto"]
        mode = f"acting on {', '.join(acting)}, elsewhere a dry run" if acting else "dry run: it proposes"
        self.notify(f"autopilot on, {mode}; its trail: {audit_file()}", timeout=4, markup=False)

    def _autopilot_said(self, line: str) -> None:
        self.notify(safe_line(line), title="autopilot", timeout=10, markup=False)
        if self._leaving:  # quitting: what it left is said after the dashboard is gone, as the CLI does
            self.keep_recovery_note(f"autopilot: {line}")

    async def action_quit(self) -> None:
        await self.leave()

    async def leave(self, return_code: int = 0) -> None:
        """Quit (`q`, SIGTERM, SIGHUP): an acting autopilot first puts back its unverified change
        (restarting the server) and says where it left each file."""
        running = [w for w in self.workers if w.group == "autopilot" and w.is_running]  # `o` off: leaving
        if running and not self._leaving:
            self._leaving = True
            self.notify("autopilot: putting the configs back first", timeout=30)
            for worker in running:
                if not worker.cancelled_event.is_set():  # a second cancel would stop it putting them back
                    worker.cancel()
            while any(worker.is_running for worker in running):
                await asyncio.sleep(0.05)
        if return_code:  # a signal: the screens wrote their recovery copies, nothing asks
            self.exit(return_code=return_code)
        else:
            await super().action_quit()  # an editor with unsaved changes asks first

    def _autopilot_state(self, states: dict[str, PilotState]) -> None:
        self._autopilot_lines |= {name: state.line() for name, state in states.items()}
        self._tell_autopilot()

    def _tell_autopilot(self) -> None:
        for screen in self.screen_stack:
            screen.post_message(AutopilotUpdated(dict(self._autopilot_lines)))

    def open_editor(self, name: str) -> None:
        from tui.configs.restart import HEALTH_TIMEOUT_S  # not before the first frame (a test)
        from tui.screens.editor import EditorScreen  # not before the first frame (a test)

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
                health_timeout_s=endpoint.health_timeout_s or HEALTH_TIMEOUT_S,
                client=self.http_client,
                keep_recovery_note=self.keep_recovery_note,
            )
        )

    def open_tune(self, name: str) -> None:
        """`T`: sweep the endpoint's speculative parameter with restarts (needs its config and restart)."""
        from tui.screens.tune import TuneScreen  # not before the first frame (a test)

        endpoint: EndpointSettings | None = self.board.endpoint(name)
        if endpoint is None or endpoint.config_file is None or not endpoint.restart_command:
            self.notify(f"{name}: tuning needs a config_file and a restart_command", severity="warning")
            return
        self.push_screen(
            TuneScreen(
                endpoint,
                on_finished=lambda _result: self._reread_configs(),
                on_calibrated=self._calibrated,
                client=self.http_client,
                health_timeout_s=endpoint.health_timeout_s or 60.0,
            )
        )

    def _calibrated(self, model: StepCostModel) -> None:
        """A calibration from the tune screen: the advisor uses its model from the next reading on."""
        if self.board.advice is not None:
            self.board.advice.add_model(model)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title != "Screenshot":  # ours (below) saves into the current folder
                yield command
        for title, help_text, action in PALETTE_COMMANDS:
            # Not where the screen lacks the action (the bench from the editor, the log viewer elsewhere).
            target = self._palette_target(screen, action)
            if target is not None and target[0].check_action(target[1], ()) is not False:
                yield SystemCommand(title, help_text, partial(self.run_action, target[1], target[0]))

    def _palette_target(self, screen: Screen[Any], action: str) -> tuple[Any, str] | None:
        """The node that runs `action` on `screen`, and the action's name; None when it has no such action."""
        namespace, _, name = action.rpartition(".")
        node: Any = self if namespace == "app" else screen
        if namespace == "table":
            node = next((table for table in screen.query("EndpointTable") if table.display), None)
        return (node, name) if callable(getattr(node, f"action_{name}", None)) else None

    # --- themes and header ----------------------------------------------------------------------------------

    def _load_themes(self, folders: list[Path] | None) -> list[str]:
        """Registers the theme files' themes, sets the remembered one; returns the problems."""
        loaded = load_themes(folders)
        for theme in loaded.themes.values():
            self.register_theme(theme)
        self.theme_names: list[str] = sorted(loaded.themes)
        wanted = remembered_theme() if self._remember_theme_choice else None
        self.theme = next(
            (c for c in (wanted, DEFAULT_THEME) if c and c in self.available_themes), self.theme
        )
        self._saved_theme = wanted or self.theme
        return loaded.problems

    def _theme_changed(self, theme: Theme) -> None:
        """Any theme change (t, or the palette's theme picker) is remembered for the next run."""
        if self._remember_theme_choice and self.is_running and theme.name != self._saved_theme:
            self._saved_theme = theme.name
            self.run_worker(self._save_choice(remember_theme, theme.name), name="remember theme")

    async def _save_choice(self, remember: Callable[[Any], str | None], choice: object) -> None:
        problem = await asyncio.to_thread(remember, choice)
        if problem:
            self.notify(problem, severity="warning")

    def _remember_table(self, choice: TableChoice) -> None:
        work = self._save_choice(remember_table, choice)
        self.run_worker(work, name="remember table", group="remember-table", exclusive=True)

    def _update_subtitle(self) -> None:
        self._subtitle_due = False
        parts = self.source.status()
        if self.source.paused:
            parts.append("PAUSED")
        if active := self.alerts.active_count():
            parts.append(f"{active} alert{'s' if active > 1 else ''} (a)")
        room = subtitle_room(self.size.width, self.title)
        shown = safe_line(" · ".join(fit_parts(parts, room)))  # it may quote a server's error
        self.sub_title = fit_words(shown, room)

    def on_resize(self) -> None:
        self._update_subtitle()
