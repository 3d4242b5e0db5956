"""Saves are atomic: a crash or a kill at any moment leaves the old or the new file whole."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tui.configs import atomic
from tui.configs.atomic import FileStamp, atomic_write, changed_on_disk
from tui.configs.editing import ChangedOnDiskError, open_config, save_text

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


def test_external_change_is_detected(tmp_path: Path) -> None:
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
    target.unlink()
    assert changed_on_disk(target, FileStamp(1, 1, "x"))


def test_save_text_refuses_unparsable_text(tmp_path: Path) -> None:
    from tui.configs.errors import ConfigSyntaxError

    target = tmp_path / "config.toml"
    target.write_bytes(OLD)
    with pytest.raises(ConfigSyntaxError):
        save_text(target, "[model\n", "vllm_toml", FileStamp.of_bytes(target, OLD))
    assert target.read_bytes() == OLD
