"""What every spectop App does to keep the terminal safe: control characters dropped from all drawn text
(a net under `safe_line`), and SIGTERM / SIGHUP ending the app as `q` does, so the terminal is given back."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from rich.segment import Segment
from textual.app import App
from textual.color import Color
from textual.filter import LineFilter

from tui.sanitize import drop_controls, safe_line

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class DropControls(LineFilter):
    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if all(segment.text.isprintable() for segment in segments):
            return segments
        return [
            segment if segment.text.isprintable() else Segment(drop_controls(segment.text), *segment[1:])
            for segment in segments
        ]


_DROP_CONTROLS = DropControls()  # one instance: Strip caches filtered lines per filter


class GuardsDrawnText(App[Any]):
    """Mixin for every spectop App: nothing raw drawn (see the module doc)."""

    def get_line_filters(self) -> Sequence[LineFilter]:
        return [*super().get_line_filters(), _DROP_CONTROLS]


# --- signals: the handler only schedules the exit on the event loop (raising inside Textual's shutdown
# could leave its threads waiting forever).

_SignalHandler = Callable[[int, FrameType | None], Any] | int | None  # what signal.signal returns


@dataclass
class SignalState:
    """What the signal guard knows of one App (kept beside it, not written onto it)."""

    loop: asyncio.AbstractEventLoop | None = None  # the app's event loop, once it is mounted
    pending_signal: int | None = None  # a signal that came before the loop ran
    saved_handlers: dict[int, _SignalHandler] | None = None  # the handlers there before, while installed
    exit_signal: int | None = None  # the signal that is ending the app
    notes: tuple[str, ...] = ()  # the recovery-copy notes to print once the terminal is given back


_STATES: weakref.WeakKeyDictionary[App[Any], SignalState] = weakref.WeakKeyDictionary()


def signal_state(app: App[Any]) -> SignalState:
    return _STATES.setdefault(app, SignalState())


def _handler(app: App[Any]) -> Callable[[int, FrameType | None], None]:
    def handle(number: int, _frame: FrameType | None) -> None:
        if number == signal.SIGHUP:
            # Hung up: Textual would restart its application mode on the SIGCONT that follows.
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signal.SIGCONT, signal.SIG_DFL)
        state = signal_state(app)
        if state.loop is None:
            state.pending_signal = number
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: the app has ended already
            state.loop.call_soon_threadsafe(_on_exit_signal, app, number)

    return handle


def _install(app: App[Any]) -> None:
    state = signal_state(app)
    if state.saved_handlers is not None:
        return
    handler = _handler(app)
    saved: dict[int, _SignalHandler] = {}
    for number in EXIT_SIGNALS:
        with contextlib.suppress(ValueError):  # not the main thread (some test runners)
            saved[number] = signal.signal(number, handler)
    state.saved_handlers = saved


def exit_on_signals(app: App[Any]) -> None:
    """Call from the App's on_mount: SIGTERM / SIGHUP end it like `q` (see the module doc)."""
    state = signal_state(app)
    state.loop = asyncio.get_running_loop()
    _install(app)
    if state.pending_signal is not None:
        _on_exit_signal(app, state.pending_signal)


def restore_signals(app: App[Any]) -> None:
    """Call from the App's on_unmount: the handlers that were there before."""
    state = signal_state(app)
    saved = state.saved_handlers or {}
    state.saved_handlers = None
    for number, previous in saved.items():
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(number, previous)


def _on_exit_signal(app: App[Any], number: int) -> None:
    state = signal_state(app)
    if state.exit_signal is not None:
        return  # already ending (a logout sends SIGHUP and SIGTERM at once)
    state.exit_signal = number
    notes = []
    for screen in list(app.screen_stack):
        try:
            notes.append(screen.write_recovery_copy() if hasattr(screen, "write_recovery_copy") else None)
        except Exception as failure:  # the app is going down: report, never raise
            notes.append(f"spectop: could not write a recovery copy: {failure}")
    state.notes = tuple(note for note in notes if note)
    leave = getattr(app, "leave", None)  # an App with work to undo first (an acting autopilot's change)
    if leave is None:
        app.exit(return_code=128 + number)
    else:
        app.call_later(leave, 128 + number)


def release_input_thread(app: App[Any]) -> None:
    """Stop Textual's input thread if `App.run` ended without stopping it (it keeps the process alive)."""
    if (event := getattr(getattr(app, "_driver", None), "exit_event", None)) is not None:
        event.set()


def run_app(app: App[Any]) -> None:
    """`app.run()` for the TUI commands: ended by a signal like by `q`, and never left holding a thread."""
    _install(app)  # from before Textual starts: a signal then is acted on once the app is mounted
    try:
        app.run()
    finally:
        restore_signals(app)
        release_input_thread(app)
    for note in signal_state(app).notes:
        with contextlib.suppress(OSError, ValueError):  # the terminal may be gone (a logout)
            print(safe_line(note), file=sys.stderr)
