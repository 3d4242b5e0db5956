"""Atomic file writes: a reader sees the old file or the new one, whole, never a half-written one.

The new bytes go to a temporary file beside the file (`.NAME.PID.RANDOM.tmp`, unique per write, so two
writers never share one), are fsynced, and replace the file with one `os.replace` (a rename); the folder
is fsynced after. A crash at any point leaves the old or the new file whole; temp files a killed write
left behind are removed by the next write of the same file. `write_file` is what every file spectop
writes goes through; `tui.configs.atomic` adds what a config save needs (backup, owner, read-only).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path

TEMP_SUFFIX = ".tmp"
# A temp file this old belongs to no running write (a write takes milliseconds).
STALE_TEMP_AGE_S = 600.0
NEW_FILE_MODE = 0o644
_LEGACY_TEMP = r"[a-z0-9_]{8}"  # tempfile.mkstemp's names, written by older spectop versions


class TempFileError(OSError):
    """The temp file could not be made beside the file (a read-only or full folder)."""


def resolve_target(path: Path) -> Path:
    """The file a write really changes: a symlink's final target (the link itself stays)."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def write_file(path: Path, data: bytes | str) -> Path:
    """Replace `path` (a symlink's target) with `data` atomically, making its folder if needed; an existing
    file keeps its mode. Raises OSError (the file is then unchanged and no temp file is left)."""
    target = resolve_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    remove_stale_temps(target.parent, target.name)
    replace_atomically(target, data.encode() if isinstance(data, str) else data, mode)
    fsync_dir(target.parent)
    return path


def replace_atomically(
    target: Path, data: bytes, mode: int, prepare: Callable[[int], None] | None = None
) -> None:
    """Write `data` to a new temp file beside `target`, let `prepare` adjust the open file (owner,
    attributes), give it `mode`, fsync it and rename it over `target`. Any failure removes the temp file
    and is raised; `target` is then unchanged."""
    fd, temp = _create_temp(target.parent, target.name)
    try:
        try:
            _write_all(fd, data)
            if prepare is not None:
                prepare(fd)
            os.fchmod(fd, mode)  # after a chown in `prepare`, which may clear setuid/setgid bits
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not supported on every platform / filesystem
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _temp_pattern(name: str) -> re.Pattern[str]:
    """Exactly the temp names this module writes for `name`: `.NAME.PID.RANDOM.tmp` (or the older
    `.NAME.RANDOM.tmp`)."""
    escaped, suffix = re.escape(name), re.escape(TEMP_SUFFIX)
    return re.compile(rf"^\.{escaped}\.(?:(?P<pid>\d+)\.[0-9a-f]{{8}}|{_LEGACY_TEMP}){suffix}$")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


def remove_stale_temps(folder: Path, name: str, *, now: float | None = None) -> list[Path]:
    """Delete temp files of `name` a killed write left: only this module's own names, only regular files,
    and only when the writing process is gone or the file is older than STALE_TEMP_AGE_S. Never raises."""
    pattern = _temp_pattern(name)
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        pid = match.group("pid")
        old = now - info.st_mtime > STALE_TEMP_AGE_S
        if old or (pid is not None and not _pid_alive(int(pid))):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        temp = folder / f".{name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            return os.open(temp, flags, 0o600), temp
        except FileExistsError:
            continue
        except OSError as error:
            raise TempFileError(error.errno, error.strerror, os.fspath(folder)) from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
