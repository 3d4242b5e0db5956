"""A spectop TUI command on a real pseudo-terminal (its controlling terminal, as after an SSH login):
what it writes, and what happens when the terminal closes or a signal comes."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ALT_SCREEN_ON = b"\x1b[?1049h"
ALT_SCREEN_OFF = b"\x1b[?1049l"
MOUSE_OFF = b"\x1b[?1000l"
# Only to find a hang (a test waits on conditions; this is no speed target).
HANG_S = 90.0


def _controlling_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a live process, from /proc (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PtySession:
    def __init__(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x18\x00\x50\x00\x00\x00\x00\x00")  # 24 rows, 80 columns
        os.set_blocking(self.master, False)
        environment = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color", **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui", *args], stdin=slave, stdout=slave, stderr=slave,
            preexec_fn=_controlling_terminal, env=environment, cwd=cwd or REPO, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.output = b""
        self.closed = False

    def read(self, timeout_s: float = 0.2) -> bytes:
        if self.closed:
            return b""
        ready, _, _ = select.select([self.master], [], [], timeout_s)
        if not ready:
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

    def signal(self, number: int = signal.SIGTERM) -> None:
        self.process.send_signal(number)

    def wait_exit(self) -> int:
        deadline = time.monotonic() + HANG_S
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"still running {HANG_S} s after the signal (cpu {self.cpu()} s)")
            self.read() if not self.closed else time.sleep(0.1)
        while self.read(0.05):  # what it wrote last
            pass
        return self.process.returncode

    def cpu(self) -> float | None:
        return cpu_seconds(self.process.pid)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if not self.closed:
            self.close_terminal()
