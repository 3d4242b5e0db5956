"""What the benchmark scripts share: the repository on sys.path (tests.* helpers), a process's CPU seconds,
spectop on a pseudo-terminal, and the figures printed one per line."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of process `pid` (every thread) so far, from /proc: the wall time an idle machine would
    take for CPU-bound work, whatever the load of this one; None once the process is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spectop_on_pty(
    args: list[str], home: Path, columns: int, rows: int, python: tuple[str, ...] = (), **env: str
) -> tuple[subprocess.Popen[bytes], int]:
    """`python [PYTHON] -m tui ARGS` on a new pseudo-terminal of `columns` x `rows`, its folders in `home`,
    with compiled modules cached as an install has them; the process and the terminal's leader fd."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
    for folder in ("config", "data", "state"):
        environment[f"XDG_{folder.upper()}_HOME"] = str(home / folder)
    environment |= {"HOME": str(home), **env}
    environment.pop("NO_COLOR", None)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    process = subprocess.Popen(
        [sys.executable, *python, "-m", "tui", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=ROOT,
        env=environment,
        start_new_session=True,
    )
    os.close(follower)
    return process, leader


def print_figures(result: Mapping[str, object], width: int, digits: int = 3) -> None:
    for key, value in result.items():
        print(
            f"{key:>{width}}: {value:.{digits}f}" if isinstance(value, float) else f"{key:>{width}}: {value}"
        )
