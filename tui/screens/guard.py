"""The fallback guard in the app: its dialog (the offer to switch speculation off, or a past action's
diff) and `GuardDriver`, the steps the app dispatches to on every change of an endpoint.

Keyboard only and sized for 80x24: the reason and figures on top, the diff in a scroll below, one line
of keys. An offer answers True (y / enter: switch off) or False (n / escape: decline); a past action's
view closes with any of those keys.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from dataclasses import replace
from functools import partial
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.board import Board
from tui.format import fmt_clock
from tui.sanitize import safe_line, safe_text
from tui.settings import EndpointSettings
from tui.sources.base import Source
from tui.telemetry.recording import RecordingError
from tui.tune.guard import GuardDecision, GuardInput, GuardRecord, decide, switch_speculation_off
from tui.tune.guard_state import GuardBook, guard_input, log_record, prepare, record_for
from tui.widgets.config_dialogs import diff_text


class GuardDialog(ModalScreen[bool]):
    DEFAULT_CSS = """
    GuardDialog { align: center middle; }
    GuardDialog > Vertical { width: 100%; max-width: 100; height: 100%; max-height: 30;
                             border: thick $warning; background: $surface; padding: 0 1; }
    GuardDialog .figures { height: auto; color: $warning; }
    GuardDialog VerticalScroll { height: 1fr; }
    GuardDialog .keys { height: 1; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "answer(True)", "switch off"),
        Binding("n,escape", "answer(False)", "decline"),
    ]

    def __init__(
        self,
        endpoint: str,
        title: str,
        figures: str,
        diff: str,
        *,
        offer: bool = True,
    ) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.title_text = title
        self.figures = figures
        self.diff = diff
        self.offer = offer

    @classmethod
    def offering(cls, endpoint: str, reason: str, diff: str) -> GuardDialog:
        """The offer: `reason` is the guard decision's (the figures: acceptance, threshold, how long)."""
        title = f"guard · {endpoint}: switch speculative decoding off?"
        return cls(endpoint, title, reason, diff)

    @classmethod
    def showing(cls, endpoint: str, time: float, message: str, diff: str) -> GuardDialog:
        return cls(endpoint, f"{endpoint} · {fmt_clock(time)}", message, diff, offer=False)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(safe_line(self.title_text), markup=False)
            yield Static(safe_line(self.figures), classes="figures", markup=False)
            with VerticalScroll():
                yield Static(diff_text(safe_text(self.diff)) if self.diff else "(no diff)", id="guard-diff")
            keys = "[y/enter] switch off (save, restart, /health)   [n/esc] decline"
            yield Static(keys if self.offer else "[esc] close", classes="keys", markup=False)

    def action_answer(self, switch_off: bool) -> None:
        self.dismiss(switch_off and self.offer)


class GuardDriver:
    """The guard's steps in the running app: the cheap look on every change of an endpoint, the config
    read and second look in a worker, then the dialog (ask) or the switch (auto, or a yes to the offer)
    in a worker that never blocks the screens. The per-endpoint state is the core's `GuardBook`.

    The app gives what the driver needs: its board and source, the wall clock, whether a planned
    restart is under way, how to show one starting and ending on the card ("restarting", as for the
    editor's ctrl+r), and `changed(name)` after each record went into the alerts list.
    """

    def __init__(
        self,
        app: App[Any],
        board: Board,
        source: Source,
        clock: Callable[[], float],
        *,
        restarting: Callable[[str], bool],
        restart_began: Callable[[str], None],
        restart_ended: Callable[[bool, str], None],
        changed: Callable[[str], None],
    ) -> None:
        self.app = app
        self.board = board
        self.source = source
        self.clock = clock
        self.restarting = restarting
        self.restart_began = restart_began
        self.restart_ended = restart_ended
        self.changed = changed
        self.book = GuardBook()

    def watch(self, names: Iterable[str]) -> None:
        """After a board change of `names`: start a check for each whose first look calls for action."""
        if not self.source.allows_editing or self.source.http_client is None:
            return  # a replay: nothing to switch
        for name in names:
            endpoint = self.board.endpoint(name)
            if endpoint is None or endpoint.guard == "off":
                continue
            state = self.book.candidate(
                endpoint,
                self.board.alerts,
                self.board.readings.get(name),
                now=self.clock(),
                restarting=self._changing(endpoint),
            )
            if state is not None:
                self.book.begin(name, "checking")
                self._work(self._check(endpoint), name)

    def _changing(self, endpoint: EndpointSettings) -> bool:
        """A restart under way, or the user at the endpoint's config (the editor's buffer, a tune's sweep):
        the guard holds back (its write would race theirs, and a sweep's low acceptance is expected)."""
        from tui.screens.editor import EditorScreen
        from tui.screens.tune import TuneScreen

        for screen in self.app.screen_stack:
            if isinstance(screen, TuneScreen) and screen.endpoint.name == endpoint.name:
                return True
            if isinstance(screen, EditorScreen) and screen.path == endpoint.config_file:
                return True
        return self.restarting(endpoint.name)

    def _work(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self.app.run_worker(work, name=f"guard {name}", group="guard", exit_on_error=False)

    async def _check(self, endpoint: EndpointSettings) -> None:
        """The second look, with the config file read (is speculation on, the diff), then the action."""
        name = endpoint.name
        prepared = await prepare(endpoint)
        state = guard_input(
            endpoint,
            self.board.alerts,
            self.board.readings.get(name),
            now=self.clock(),
            restarting=self._changing(endpoint),
            speculation_on=prepared.speculation_on,
            last_action_at=self.book.last_action_at.get(name),
        )
        decision = decide(state)
        if decision.action is None:
            self.book.release(name)
        elif decision.action == "switch_off":
            await self._switch(endpoint, state, decision)
        elif prepared.problem:
            self.book.acted(name, state.now)
            self._note(record_for(state, name, decision, "failed", now=state.now, detail=prepared.problem))
        else:
            self.book.begin(name, "offered")
            self._note(record_for(state, name, decision, "offered", now=state.now, diff=prepared.diff))
            answered = partial(self._answered, endpoint, state, decision, prepared.diff)
            self.app.push_screen(
                GuardDialog.offering(name, decision.reason, prepared.diff), callback=answered
            )

    def _answered(
        self,
        endpoint: EndpointSettings,
        state: GuardInput,
        decision: GuardDecision,
        diff: str,
        yes: bool | None,
    ) -> None:
        now = self.clock()
        if yes:
            self.book.begin(endpoint.name, "switching")
            self._work(self._switch(endpoint, replace(state, now=now), decision), endpoint.name)
            return
        self.book.acted(endpoint.name, now)  # declined: counts for the cool-down
        self._note(record_for(state, endpoint.name, decision, "declined", now=now, diff=diff))

    async def _switch(self, endpoint: EndpointSettings, state: GuardInput, decision: GuardDecision) -> None:
        """Speculation off, restart, health wait (tui/tune/guard.py); the card shows the restart."""
        client = self.source.http_client
        assert client is not None
        self.book.begin(endpoint.name, "switching")
        self.restart_began(f"{endpoint.url}/health")
        try:
            record = await switch_speculation_off(
                endpoint,
                client,
                decision,
                now=state.now,
                acceptance=state.acceptance,
                threshold=state.threshold,
            )
        except BaseException:
            self.restart_ended(False, "the guard's switch was interrupted")
            self.book.acted(endpoint.name, self.clock())
            raise
        self.restart_ended(record.action == "switched_off", record.detail)
        self.book.acted(endpoint.name, self.clock())
        self._note(record)

    def _note(self, record: GuardRecord) -> None:
        """Every guard action: into the alerts list (with its diff), the recording, and a notification."""
        self.board.alerts.note(record.endpoint, record.time, record.line(), record.diff)
        self.changed(record.endpoint)
        if record.action != "offered":  # an offer is its own dialog
            severity: SeverityLevel = "error" if record.action == "failed" else "warning"
            title = safe_line(f"guard · {record.endpoint}")
            self.app.notify(
                safe_line(record.line()), title=title, severity=severity, timeout=10, markup=False
            )
        self._work(self._record(record), record.endpoint)

    async def _record(self, record: GuardRecord) -> None:
        try:
            await self.source.record_guard(log_record(record))
        except (OSError, RecordingError) as error:
            self.app.notify(f"guard action not recorded: {error}", severity="warning", markup=False)
