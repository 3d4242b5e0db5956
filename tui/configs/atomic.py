"""Atomic saves that never leave a half-written file, plus change-on-disk detection.

The new bytes go to a temporary file in the same folder, are fsynced, get the
original's permissions, and replace the original with one `os.replace` (a rename).
The previous version is kept as `FILE.bak`. A crash at any point leaves either the
old or the new file whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

BACKUP_SUFFIX = ".bak"


@dataclass(frozen=True)
class FileStamp:
    """What a file looked like when read: compared before saving over it."""

    mtime_ns: int
    size: int
    sha256: str

    @classmethod
    def of_bytes(cls, path: Path, data: bytes) -> FileStamp:
        info = path.stat()
        return cls(info.st_mtime_ns, info.st_size, hashlib.sha256(data).hexdigest())


def stamp_file(path: Path) -> FileStamp | None:
    """The file's current stamp, or None when it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return FileStamp.of_bytes(path, data)


def changed_on_disk(path: Path, stamp: FileStamp | None) -> bool:
    """True when the file differs from `stamp` (content, or deleted/created since)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return stamp is not None
    if stamp is None:
        return True
    if info.st_mtime_ns == stamp.mtime_ns and info.st_size == stamp.size:
        return False  # unchanged metadata: skip hashing
    if info.st_size != stamp.size:
        return True
    return hashlib.sha256(path.read_bytes()).hexdigest() != stamp.sha256


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not supported on every platform / filesystem
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes, *, backup: bool = True) -> FileStamp:
    """Replace `path` with `data` atomically; keep the old version as `path.bak`. Returns the new stamp."""
    path = Path(path)
    folder = path.parent
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        existed = True
    except FileNotFoundError:
        mode, existed = 0o644, False
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        if backup and existed:
            _write_backup(path)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    _fsync_dir(folder)
    return FileStamp.of_bytes(path, data)


def _write_backup(path: Path) -> None:
    """Copy the current file to FILE.bak, itself atomically (the original stays in place)."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    data = path.read_bytes()
    fd, temp_name = tempfile.mkstemp(prefix=f".{backup.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, stat.S_IMODE(path.stat().st_mode))
        os.replace(temp_name, backup)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
