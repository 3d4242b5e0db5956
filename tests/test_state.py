"""The remembered choices (`state.json`): changes made at the same time, by threads or by processes, never
lose one another, and a failed change leaves the file as it was."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tui.state import read_state, remember, remember_theme, state_path

CHANGES = 40


def test_threads_changing_different_keys_lose_none() -> None:
    problems: list[str] = []

    def change(key: str) -> None:
        for number in range(CHANGES):
            problem = remember(key, number)
            if problem:
                problems.append(problem)

    threads = [threading.Thread(target=change, args=(f"thread {index}",)) for index in range(6)]
    threads.append(threading.Thread(target=lambda: [remember_theme(f"theme {n}") for n in range(CHANGES)]))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    expected = {f"thread {index}": CHANGES - 1 for index in range(6)} | {"theme": f"theme {CHANGES - 1}"}
    assert read_state() == expected


def test_processes_changing_different_keys_lose_none() -> None:
    code = (
        "import sys\n"
        "from tui.state import remember\n"
        f"for number in range({CHANGES}):\n"
        "    problem = remember(sys.argv[1], number)\n"
        "    assert problem is None, problem\n"
    )
    repo = Path(__file__).resolve().parents[1]
    processes = [
        subprocess.Popen([sys.executable, "-c", code, f"process {index}"], cwd=repo) for index in range(4)
    ]
    assert [process.wait() for process in processes] == [0] * 4
    assert read_state() == {f"process {index}": CHANGES - 1 for index in range(4)}


def test_a_failed_change_keeps_the_file_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    assert remember("table", {"columns": ["name"]}) is None
    before = state_path().read_bytes()

    def no_space(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", no_space)
    problem = remember("theme", "spectop-light")
    assert problem is not None and "cannot save the theme choice" in problem and "No space" in problem
    assert state_path().read_bytes() == before
    assert not [name for name in os.listdir(state_path().parent) if name.endswith(".tmp")]
