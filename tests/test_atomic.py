"""Every file spectop writes replaces the old one whole and durably: its bytes go to a temp file of its
own, are fsynced, and only then renamed over the file."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.advice.test_advisor import fitted
from tests.untrusted import hostile_burst
from tui.advice.stepcost import load_models, save_model
from tui.bench.burst_store import save_burst
from tui.bench.report.export import export as export_burst
from tui.configs.atomic import write_file
from tui.screens.editor_saving import write_recovery
from tui.state import TableChoice, read_state, remember, remember_table, remember_theme, state_path
from tui.tune.result import TuneResult, save_tune
from tui.tune.result import export as export_tune


def _tune() -> TuneResult:
    return TuneResult(
        started_at=datetime(2026, 12, 1, tzinfo=UTC), config_file="c.toml", kind="vllm_toml", key="k",
        endpoint="http://127.0.0.1:8000", restart_command=["x"], values=[0, 2], concurrencies=[1],
        original_value=2, baseline_value=0, requests=8, max_tokens=64, prompts="mixed", outcomes=[],
    )  # fmt: skip


def no_space(*args: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


WRITERS: dict[str, Callable[[Path], object]] = {
    "tune export": lambda folder: export_tune(_tune(), "markdown", folder / "tune.md"),
    "tune history": lambda folder: save_tune(_tune(), folder),
    "burst export": lambda folder: export_burst(hostile_burst(), "csv", folder / "burst.csv"),
    "burst history": lambda folder: save_burst(hostile_burst(), folder),
    "step-cost models": lambda folder: save_model(fitted(), folder / "step_costs.json"),
    "unsaved edits": lambda folder: write_recovery(folder / "config.toml", "[model]\n"),
    "theme choice": lambda folder: remember_theme("spectop-light"),
    "table choice": lambda folder: remember_table(TableChoice(columns=["name"])),
}


@pytest.mark.parametrize("writer", WRITERS)
def test_a_written_file_is_fsynced_before_it_replaces_the_old_one(
    writer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: set[int] = set()  # inode numbers
    renames: list[bool] = []  # for each rename: was the file renamed fsynced first?
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        synced.add(os.fstat(fd).st_ino)
        real_fsync(fd)

    def replace(source: str | Path, target: str | Path) -> None:
        renames.append(os.stat(source).st_ino in synced)
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    for _ in range(2):  # a new file, then one replaced
        WRITERS[writer](tmp_path)
    assert renames and all(renames), renames


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kept.json"
    write_file(path, "old\n")

    monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(OSError, match="No space"):
        write_file(path, "new\n")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["kept.json"]


def test_a_symlinked_file_keeps_its_link_and_a_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "state.json"
    target.parent.mkdir()
    target.write_text("old\n")
    target.chmod(0o600)
    link = tmp_path / "state.json"
    link.symlink_to(target)
    write_file(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o600


def test_threads_saving_step_cost_models_lose_none(tmp_path: Path) -> None:
    path = tmp_path / "stepcost.json"
    endpoints = [f"127.0.0.1:{8000 + index}" for index in range(6)]
    threads = [
        threading.Thread(target=save_model, args=(fitted().model_copy(update={"endpoint": endpoint}), path))
        for endpoint in endpoints
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(model.endpoint for model in load_models(path).models) == endpoints


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

    monkeypatch.setattr(os, "write", no_space)
    problem = remember("theme", "spectop-light")
    assert problem is not None and "cannot save the theme choice" in problem and "No space" in problem
    assert state_path().read_bytes() == before
    assert not [name for name in os.listdir(state_path().parent) if name.endswith(".tmp")]
