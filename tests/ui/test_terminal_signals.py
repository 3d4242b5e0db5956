"""SIGTERM / SIGHUP end a TUI like `q` does; TUI commands without a terminal exit 2 at once."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from recording_factory import write_recording
from ui_waiting import spectop, wait_for

from tui.settings import EndpointSettings
from tui.ui.terminal_guard import release_input_thread, signal_state

REPO = Path(__file__).resolve().parents[2]
ALT_SCREEN_ON = b"\x1b[?1049h"
ALT_SCREEN_OFF = b"\x1b[?1049l"
MOUSE_OFF = b"\x1b[?1000l"
# Only to find a hang (a test waits on conditions; this is no speed target).
HANG_S = 90.0


def _controlling_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtySession:
    def __init__(self, *args: str) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x18\x00\x50\x00\x00\x00\x00\x00")  # 24 rows, 80 columns
        os.set_blocking(self.master, False)
        environment = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui", *args], stdin=slave, stdout=slave, stderr=slave,
            preexec_fn=_controlling_terminal, env=environment, cwd=REPO, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.output = b""
        self.closed = False

    def read(self, timeout_s: float = 0.2) -> bytes:
        if self.closed:
            return b""
        if not select.select([self.master], [], [], timeout_s)[0]:
            return b""
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side is gone
            return b""
        self.output += chunk
        return chunk

    def wait_for_output(self, text: bytes) -> None:
        deadline = time.monotonic() + HANG_S
        while text not in self.output:
            assert time.monotonic() < deadline, f"{text!r} never written: {self.output[-400:]!r}"
            assert self.process.poll() is None, f"exited {self.process.returncode}: {self.output[-400:]!r}"
            self.read()

    def close_terminal(self) -> None:
        os.close(self.master)
        self.closed = True

    def wait_exit(self) -> int:
        deadline = time.monotonic() + HANG_S
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"still running {HANG_S} s after the signal")
            self.read() if not self.closed else time.sleep(0.1)
        while self.read(0.05):  # what it wrote last
            pass
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if not self.closed:
            self.close_terminal()


def test_sigterm_gives_the_terminal_back() -> None:
    session = PtySession("--endpoint", "http://127.0.0.1:9")
    try:
        session.wait_for_output(ALT_SCREEN_ON)
        session.wait_for_output(b"127.0.0.1:9")  # the first frame is drawn
        mark = len(session.output)
        session.process.send_signal(signal.SIGTERM)
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
        session.process.send_signal(signal.SIGTERM)
        code = session.wait_exit()
    finally:
        session.kill()
    # Ended by the signal through the app (not a KeyboardInterrupt thrown into the event loop: 130).
    assert code in (128 + signal.SIGHUP, 128 + signal.SIGTERM)


async def test_a_signal_ends_the_app_from_its_event_loop() -> None:
    app = spectop(EndpointSettings(name="gpu", url="http://127.0.0.1:9"), theme_folders=[])
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


def run_without_terminal(*args: str) -> subprocess.CompletedProcess[str]:
    """stdout to a pipe, like `spectop >out`; no stdin."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "tui", *args]
    return subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=REPO, env=env, timeout=60
    )


@pytest.mark.parametrize("command", ["dashboard", "replay", "edit", "demo"])
def test_tui_commands_without_a_terminal_exit_2(command: str, tmp_path: Path, config_toml: Path) -> None:
    config = config_toml
    argv = {
        "dashboard": ["--endpoint", "http://127.0.0.1:9"],
        "replay": ["replay", str(write_recording(tmp_path / "recording.jsonl"))],
        "edit": ["edit", str(config)],
        "demo": ["demo"],
    }[command]
    result = run_without_terminal(*argv)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "needs a terminal; use `spectop snapshot` / `spectop logs`" in result.stderr
    assert result.stderr.startswith("spectop: ")
    assert "starting two simulated" not in result.stdout  # the demo starts no sims first
