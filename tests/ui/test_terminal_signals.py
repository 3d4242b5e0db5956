"""SIGTERM / SIGHUP end a spectop TUI like `q` does: the terminal is given back (alternate screen
left, mouse reporting off), and `spectop demo` whose terminal closed exits instead of spinning in Textual's
input thread (the main thread was left waiting for it: 100% of a core, the simulators already stopped)."""

from __future__ import annotations

import os
import signal
import threading

import pytest
from pty_session import ALT_SCREEN_OFF, ALT_SCREEN_ON, MOUSE_OFF, PtySession
from ui_waiting import wait_for

from tui.settings import EndpointSettings, Settings
from tui.ui.app import SpectopApp
from tui.ui.terminal_guard import release_input_thread, signal_state


def test_sigterm_gives_the_terminal_back() -> None:
    session = PtySession("--endpoint", "http://127.0.0.1:9")
    try:
        session.wait_for_output(ALT_SCREEN_ON)
        session.wait_for_output(b"127.0.0.1:9")  # the first frame is drawn
        mark = len(session.output)
        session.signal(signal.SIGTERM)
        code = session.wait_exit()
    finally:
        session.kill()
    after = session.output[mark:]
    assert code == 128 + signal.SIGTERM
    assert ALT_SCREEN_OFF in after and MOUSE_OFF in after
    assert b"Traceback" not in session.output


def test_demo_with_its_terminal_closed_and_sigterm_exits() -> None:
    session = PtySession("demo", "--background-load", "0")
    try:
        session.wait_for_output(ALT_SCREEN_ON)
        session.wait_for_output(b"mtp-on")
        session.close_terminal()  # a logout: SIGHUP from the kernel, then SIGTERM at once
        session.signal(signal.SIGTERM)
        code = session.wait_exit()
    finally:
        session.kill()
    # Ended by the signal through the app (not a KeyboardInterrupt thrown into the event loop: 130).
    assert code in (128 + signal.SIGHUP, 128 + signal.SIGTERM)


async def test_a_signal_ends_the_app_from_its_event_loop() -> None:
    settings = Settings(endpoints=[EndpointSettings(name="gpu", url="http://127.0.0.1:9")])
    app = SpectopApp(settings, theme_folders=[], remember_theme_choice=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.screen.is_mounted)
        os.kill(os.getpid(), signal.SIGTERM)
        await wait_for(pilot, lambda: signal_state(app).exit_signal is not None)
    assert app.return_code == 128 + signal.SIGTERM


def test_release_input_thread_sets_the_drivers_exit_event() -> None:
    class Driver:
        exit_event = threading.Event()

    class Ended:
        _driver = Driver()

    release_input_thread(Ended())  # type: ignore[arg-type]
    assert Driver.exit_event.is_set()
    release_input_thread(object())  # type: ignore[arg-type]  # no driver: nothing to do


@pytest.fixture(autouse=True)
def _default_sigterm() -> object:
    previous = signal.getsignal(signal.SIGTERM)
    yield None
    signal.signal(signal.SIGTERM, previous)
