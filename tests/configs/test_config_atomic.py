"""Saves are atomic: a crash or a kill at any moment leaves the old or the new file whole."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tui.configs import atomic
from tui.configs.atomic import FileStamp, atomic_write, changed_on_disk, file_lock, lock_path
from tui.configs.editing import ChangedOnDiskError, open_config, save_text
from tui.configs.errors import ConfigSyntaxError, UnreadableFileError
from tui.paths import sample_configs_dir

OLD = b'[model]\nname = "old"\n' + b"# padding\n" * 2000
NEW = b'[model]\nname = "new"\n' + b"# other padding\n" * 3000


def test_exception_between_write_and_rename_keeps_the_old_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "config.toml"
    target.write_bytes(OLD)
    real_replace = os.replace

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == target:
            raise OSError("injected crash before rename")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    with pytest.raises(atomic.SaveError, match="injected"):
        atomic_write(target, NEW)
    assert target.read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "config.toml.bak"]  # no temp left


def test_keyboard_interrupt_during_fsync_keeps_the_old_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "config.toml"
    target.write_bytes(OLD)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, NEW)
    assert target.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


_SAVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tui.configs.atomic import atomic_write
    target, counter = Path(sys.argv[1]), Path(sys.argv[2])
    old, new = Path(sys.argv[3]).read_bytes(), Path(sys.argv[4]).read_bytes()
    n = 0
    while True:
        atomic_write(target, new if n % 2 == 0 else old)
        n += 1
        counter.write_text(str(n))
    """
)


def test_killed_saver_leaves_a_whole_file(tmp_path: Path) -> None:
    old_file, new_file = tmp_path / "old.bin", tmp_path / "new.bin"
    old_file.write_bytes(OLD)
    new_file.write_bytes(NEW)
    work = tmp_path / "work"
    work.mkdir()
    target, counter = work / "config.toml", tmp_path / "count"
    target.write_bytes(OLD)
    repo = Path(__file__).resolve().parents[2]
    for round_number in range(4):
        counter.unlink(missing_ok=True)
        child = subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(target), str(counter), str(old_file), str(new_file)], cwd=repo
        )
        deadline = time.monotonic() + 30
        needed = 3 + round_number * 7  # kill at different points of the loop
        while time.monotonic() < deadline:
            # Read once: the child rewrites the counter, so a second read may see it empty.
            count = counter.read_text().strip() if counter.exists() else ""
            if count.isdigit() and int(count) >= needed:
                break
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
        assert counter.exists(), "the saver never saved"
        assert target.read_bytes() in (OLD, NEW)
        backup = work / "config.toml.bak"
        assert backup.read_bytes() in (OLD, NEW)


def test_permissions_and_backup_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_bytes(OLD)
    target.chmod(0o600)
    result = atomic_write(target, NEW)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_bytes() == NEW
    assert (tmp_path / "config.toml.bak").read_bytes() == OLD
    assert result.stamp == FileStamp.of_bytes(target, target.read_bytes()) and result.warnings == ()


def test_save_text_refuses_a_file_changed_on_disk_and_unparsable_text(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_bytes(OLD)
    opened = open_config(target)
    assert not changed_on_disk(target, opened.stamp)
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))  # touched, same bytes
    assert not changed_on_disk(target, opened.stamp)
    target.write_bytes(OLD.replace(b"old", b"odd"))  # same size, other bytes
    assert changed_on_disk(target, opened.stamp)
    with pytest.raises(ChangedOnDiskError):
        save_text(target, NEW.decode(), "vllm_toml", opened.stamp)
    assert target.read_bytes() == OLD.replace(b"old", b"odd")
    save_text(target, NEW.decode(), "vllm_toml", opened.stamp, force=True)
    assert target.read_bytes() == NEW
    with pytest.raises(ConfigSyntaxError):
        save_text(target, "[model\n", "vllm_toml", FileStamp.of_bytes(target, NEW))
    assert target.read_bytes() == NEW
    target.unlink()
    assert changed_on_disk(target, FileStamp(1, 1, "x"))


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
    with file_lock(config):
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
    with file_lock(link), file_lock(target):  # the save inside `config set` takes it again
        assert atomic._held.depth[lock_path(target)] == 2
    assert lock_path(target) not in atomic._held.depth


def test_another_thread_waits_for_the_lock(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    entered = threading.Event()

    def save_from_another_thread() -> None:
        with file_lock(config):
            entered.set()

    with file_lock(config):
        other = threading.Thread(target=save_from_another_thread)
        other.start()
        assert not entered.wait(0.2)  # re-entrance is per thread: the other one must wait
    other.join()
    assert entered.is_set()


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
