"""Two `spectop config set` of different keys at the same moment both land (a lock around read,
change and save); `config show` / `set` on a FIFO or anything not a regular file is refused at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tui.configs import atomic
from tui.configs.atomic import config_lock, lock_path
from tui.configs.editing import open_config
from tui.configs.errors import UnreadableFileError
from tui.paths import sample_configs_dir

REPO = Path(__file__).resolve().parents[2]


def _spectop(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tui", *args], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def waiting_for_lock(config: Path, count: int) -> None:
    """Until `count` processes wait on the config's lock, its folder's (/proc/locks lists them with `->`)."""
    inode = lock_path(config).stat().st_ino
    deadline = time.monotonic() + 60  # finds a hang; no speed target
    while True:
        lines = Path("/proc/locks").read_text().splitlines()
        waiting = [line for line in lines if "->" in line and line.split()[-3].endswith(f":{inode}")]
        if len(waiting) >= count:
            return
        assert time.monotonic() < deadline, lines
        time.sleep(0.05)


def test_two_concurrent_sets_of_different_keys_both_land(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text((sample_configs_dir() / "config.toml").read_text(encoding="utf-8"), encoding="utf-8")
    # While this test holds the lock, both commands start and wait for it, then race for it the moment it is
    # released: each must read the other's result (without the lock both read the same old text).
    with config_lock(config):
        first = _spectop("config", "set", str(config), "speculative.num_speculative_tokens", "4")
        second = _spectop("config", "set", str(config), "scheduler.max_num_seqs", "77")
        waiting_for_lock(config, 2)
    for process in (first, second):
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    text = config.read_text(encoding="utf-8")
    assert "num_speculative_tokens = 4" in text and "max_num_seqs = 77" in text


def test_the_lock_is_reentrant_and_on_the_symlinks_target_folder(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "real.toml"
    target.write_text("a = 1\n")
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    assert lock_path(link) == tmp_path / "real"
    with config_lock(link), config_lock(target):  # the save inside `config set` takes it again
        assert atomic._held.depth[lock_path(target)] == 2
    assert lock_path(target) not in atomic._held.depth


def test_another_thread_waits_for_the_lock(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    entered = threading.Event()

    def save_from_another_thread() -> None:
        with config_lock(config):
            entered.set()

    with config_lock(config):
        other = threading.Thread(target=save_from_another_thread)
        other.start()
        assert not entered.wait(0.2)  # re-entrance is per thread: the other one must wait
    other.join()
    assert entered.is_set()


def test_a_second_process_waits_for_the_lock(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("a = 1\n")
    code = (
        "import sys; from pathlib import Path; from tui.configs.atomic import config_lock\n"
        f"with config_lock(Path({str(config)!r})): print('got it', flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with config_lock(config):
        process = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        waiting_for_lock(config, 1)
        assert process.poll() is None
    out, _ = process.communicate(timeout=60)
    assert out.strip() == "got it"


@pytest.mark.parametrize("action", [["show"], ["set", "speculative.num_speculative_tokens", "3"], ["lint"]])
def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, action: list[str]) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    process = _spectop("config", action[0], str(fifo), *action[1:])
    try:
        _, err = process.communicate(timeout=60)  # a hang is the bug
    finally:
        process.kill()
    assert process.returncode == 2
    assert "FIFO" in err and "not a regular file" in err


def test_open_config_refuses_a_directory_and_a_device(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError, match="a directory, not a regular file"):
        open_config(tmp_path)
    with pytest.raises(UnreadableFileError, match="a character device, not a regular file"):
        open_config(Path("/dev/null"))


def test_a_save_leaves_no_lock_file_beside_the_config(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text((sample_configs_dir() / "config.toml").read_text(encoding="utf-8"), encoding="utf-8")
    process = _spectop("config", "set", str(config), "scheduler.max_num_seqs", "77")
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["config.toml", "config.toml.bak"]
