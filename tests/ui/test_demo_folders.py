"""The next demo removes the folders of demos that were killed, and only those; the
burst screen of the demo is A = MTP off, B = MTP on whichever card is focused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from textual.widgets import Select
from ui_waiting import wait_for

from tui.bench.session import EndpointArm
from tui.paths import themes_dir
from tui.settings import EndpointSettings, Settings
from tui.sim.supervisor import FOLDER_PREFIX, KEPT_FILE, PID_FILE, clean_old_folders
from tui.ui.app import SpectopApp


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_folders_of_dead_demos_are_removed(tmp_path: Path) -> None:
    now = time.time()
    folders = {
        name: tmp_path / f"{FOLDER_PREFIX}{name}" for name in ("dead", "alive", "kept", "old", "young")
    }
    for folder in folders.values():
        folder.mkdir()
    (folders["dead"] / PID_FILE).write_text(f"{_dead_pid()}\n")
    (folders["alive"] / PID_FILE).write_text(f"{os.getpid()}\n")
    (folders["kept"] / PID_FILE).write_text(f"{_dead_pid()}\n")
    (folders["kept"] / KEPT_FILE).write_text("")
    os.utime(folders["old"], (now - 3600, now - 3600))  # an older spectop's folder: no pid file
    (tmp_path / "unrelated").mkdir()
    removed = clean_old_folders(tmp_path, now=now)
    assert sorted(removed) == sorted([folders["dead"], folders["old"]])
    assert (
        all(folders[name].exists() for name in ("alive", "kept", "young"))
        and (tmp_path / "unrelated").exists()
    )


async def test_the_demo_burst_is_mtp_off_against_mtp_on(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    endpoints = [
        EndpointSettings(name=name, url=f"http://127.0.0.1:{port}")
        for name, port in (("mtp-off", 9), ("mtp-on", 10))
    ]
    app = SpectopApp(
        Settings(poll_interval_s=60, endpoints=endpoints),
        theme_folders=[themes_dir()],
        remember_theme_choice=False,
        bench_pair=("mtp-off", "mtp-on"),
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.screen.query("EndpointCard")) == 2)
        await pilot.press("down", "down")  # mtp-on's card (as after editing it)
        await pilot.press("b")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "BenchScreen")
        a, b = (app.screen.query_one(f"#{side}-select", Select).value for side in "ab")
        assert isinstance(a, EndpointArm) and a.name == "mtp-off"
        assert isinstance(b, EndpointArm) and b.name == "mtp-on"
