"""Run spectop as a user does: the installed `spectop` console script (or `python -m tui`) in a subprocess,
or its dashboard app driven with Pilot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import DEVNULL, PIPE
from typing import Any

from tui.paths import themes_dir
from tui.settings import Settings
from tui.ui.app import SpectopApp


def spectop_command() -> list[str]:
    script = Path(sys.executable).parent / "spectop"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tui"]


def private_env(home: Path) -> dict[str, str]:
    """The environment with spectop's config, data and state folders moved into `home` (a tmp dir)."""
    folders = {
        name: str(home / name.lower()) for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
    }
    return {**os.environ, **folders, "NO_COLOR": "1"}


def run_spectop(args: list[str], home: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*spectop_command(), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=private_env(home),
        stdin=DEVNULL,
        check=False,
    )


@contextmanager
def spectop_running(args: list[str], home: Path) -> Iterator[subprocess.Popen[str]]:
    """`spectop` started in the background; killed on the way out if the block left it running."""
    process = subprocess.Popen(
        [*spectop_command(), *args], stdout=PIPE, stderr=PIPE, text=True, env=private_env(home), stdin=DEVNULL
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def bench_json(
    args: list[str], home: Path, name: str = "bench", timeout_s: float = 300
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """`spectop bench ARGS --no-history --json` and the report it wrote (which must be there)."""
    report = home / f"{name}.json"
    done = run_spectop(["bench", *args, "--no-history", "--json", str(report)], home, timeout_s)
    assert report.is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(report.read_text(encoding="utf-8")), done


def dashboard(settings: Settings, **options: Any) -> SpectopApp:
    """The dashboard app (to drive with Pilot) with the shipped themes, not remembering a theme choice."""
    return SpectopApp(settings, theme_folders=[themes_dir()], remember_theme_choice=False, **options)


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
