"""Atomic file writes: a reader sees the old file or the new one, whole, never a half-written one.
`write_file` is what every file spectop writes goes through; `atomic_write` adds what a config save needs
(owner, mode, xattrs, `FILE.bak`, refusing a read-only file) and fails with a one-line `SaveError`."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import grp
import hashlib
import os
import pwd
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tui.configs.errors import ConfigError

BACKUP_SUFFIX = ".bak"

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
    """Write `data` to a temp file beside `target` (`prepare` adjusts the open file), fsync, rename over."""
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
    """The temp names this module writes for `name`: `.NAME.PID.RANDOM.tmp` (or `.NAME.RANDOM.tmp`)."""
    escaped, suffix = re.escape(name), re.escape(TEMP_SUFFIX)
    return re.compile(rf"^\.{escaped}\.(?:(?P<pid>\d+)\.[0-9a-f]{{8}}|{_LEGACY_TEMP}){suffix}$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        pass
    return True


def remove_stale_temps(folder: Path, name: str) -> None:
    """Delete temp files of `name` a killed write left: only this module's own names, only regular files,
    and only when the writing process is gone or the file is older than STALE_TEMP_AGE_S. Never raises."""
    pattern = _temp_pattern(name)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
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
        old = time.time() - info.st_mtime > STALE_TEMP_AGE_S
        if old or (pid is not None and not _pid_alive(int(pid))):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


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


class SaveError(ConfigError):
    """A save that did not happen; the file on disk is unchanged."""


class ReadOnlyFileError(SaveError):
    """The file's mode gives the user no write permission; replacing it needs an explicit override."""


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


@dataclass(frozen=True)
class SaveResult:
    """A finished save: the new stamp, the file really written, and what could not be kept."""

    stamp: FileStamp
    written: Path
    warnings: tuple[str, ...] = ()


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


def mode_allows_write(mode: int, file_uid: int, file_gid: int, uid: int, groups: Iterable[int]) -> bool:
    """Whether the mode bits let `uid` write: for root any write bit counts (0444 is read-only on purpose)."""
    if uid == 0:
        return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    if uid == file_uid:
        return bool(mode & stat.S_IWUSR)
    if file_gid in set(groups):
        return bool(mode & stat.S_IWGRP)
    return bool(mode & stat.S_IWOTH)


def read_only_reason(path: Path, info: os.stat_result) -> str | None:
    """Why the current user must not replace the file (None when it is writable)."""
    if mode_allows_write(
        info.st_mode, info.st_uid, info.st_gid, os.geteuid(), {os.getegid(), *os.getgroups()}
    ):
        return None
    return f"{path} is read-only (mode {stat.S_IMODE(info.st_mode):04o}, owner {_owner_text(info)})"


def _owner_text(info: os.stat_result) -> str:
    """`user:group` of a file, by name where the system knows the ids."""
    try:
        user = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        user = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return f"{user}:{group}"


def _keep_owner(fd: int, original: os.stat_result) -> str | None:
    """Give the open temp file the original's owner and group; a warning when not permitted."""
    current = os.fstat(fd)
    if (current.st_uid, current.st_gid) == (original.st_uid, original.st_gid):
        return None
    with contextlib.suppress(PermissionError):
        os.fchown(fd, original.st_uid, original.st_gid)
        return None
    with contextlib.suppress(PermissionError):
        os.fchown(fd, -1, original.st_gid)  # a group the user belongs to can still be kept
    now = os.fstat(fd)
    return (
        f"owner {_owner_text(original)} not kept (not permitted): the file is now {_owner_text(now)}; "
        f"run as root or chown it back"
    )


def _describe(error: OSError) -> str:
    full = error.errno in (errno.ENOSPC, errno.EDQUOT)
    return "no space left on the device" if full else error.strerror or str(error)


def _keep_xattrs(fd: int, source: Path) -> str | None:
    """Copy the extended attributes of `source` (POSIX ACLs, SELinux label, user.*); warn of any lost."""
    if not hasattr(os, "listxattr"):
        return None
    try:
        names = os.listxattr(source)
    except OSError:  # the filesystem has none
        return None
    lost = []
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(source, name))
        except OSError:
            lost.append(name)
    return f"extended attributes not kept (not permitted): {', '.join(lost)}" if lost else None


def _replace_with(
    target: Path, data: bytes, original: os.stat_result | None, saving: Path, what: str = ""
) -> tuple[str, ...]:
    """Write `data` with `original`'s metadata over `target`; errors name `saving` (and `what`)."""
    warnings: list[str] = []

    def keep_metadata(fd: int) -> None:
        if original is not None:
            source = resolve_target(saving)
            for warning in (_keep_owner(fd, original), _keep_xattrs(fd, source)):
                if warning:
                    warnings.append(f"{source}: {warning}")

    mode = stat.S_IMODE(original.st_mode) if original is not None else NEW_FILE_MODE
    try:
        replace_atomically(target, data, mode, keep_metadata)
    except TempFileError as error:
        raise SaveError(
            f"{saving}: cannot create a temporary file in {target.parent}: {_describe(error)}; "
            "the file is unchanged"
        ) from None
    except OSError as error:
        raise SaveError(f"{saving}: {what}{_describe(error)}; the file is unchanged") from None
    return tuple(warnings)


def atomic_write(
    path: Path, data: bytes, *, backup: bool = True, allow_read_only: bool = False
) -> SaveResult:
    """Replace `path` (a symlink's target) with `data` atomically, keeping owner, group and mode, and the old
    version as `FILE.bak`; a read-only file only with `allow_read_only`. Raises SaveError."""
    target = resolve_target(Path(path))
    try:
        original: os.stat_result | None = target.stat()
    except FileNotFoundError:
        original = None
    except OSError as error:
        raise SaveError(f"{path}: cannot read its status: {_describe(error)}") from None
    if original is not None and not stat.S_ISREG(original.st_mode):
        raise SaveError(f"{target} is not a regular file")
    if original is not None and not allow_read_only:
        reason = read_only_reason(target, original)
        if reason:
            raise ReadOnlyFileError(reason)
    remove_stale_temps(target.parent, target.name)
    remove_stale_temps(target.parent, target.name + BACKUP_SUFFIX)
    if backup and original is not None:
        _write_backup(target, original, Path(path))
    warnings = _replace_with(target, data, original, Path(path))
    fsync_dir(target.parent)
    if original is not None and original.st_nlink > 1:
        others = original.st_nlink - 1
        warnings += (f"{target}: had {others} other hard link(s); they still hold the previous version",)
    return SaveResult(FileStamp.of_bytes(target, data), target, warnings)


def _write_backup(target: Path, original: os.stat_result, saving: Path) -> None:
    """Copy the current file to FILE.bak, itself atomically (the original stays in place)."""
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    try:
        data = target.read_bytes()
    except OSError as error:
        raise SaveError(f"{saving}: cannot read it for the backup: {_describe(error)}") from None
    # Owner warnings are reported once, for the file itself.
    _replace_with(backup, data, original, saving, f"writing the backup {backup.name}: ")


class _Held(threading.local):
    """The folders this thread holds locked → how many times (the lock is re-entrant per thread)."""

    def __init__(self) -> None:
        self.depth: dict[Path, int] = {}


_held = _Held()


def lock_path(path: Path) -> Path:
    """What `file_lock` locks: the folder of the (symlink's) target, leaving no lock file beside it."""
    return resolve_target(Path(path)).parent


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive `flock` on the folder of the file's target while spectop reads, changes and writes it
    back, so changes made at once (processes, threads) never lose one another (re-entrant per thread)."""
    lock = lock_path(path)
    depth = _held.depth
    if lock in depth:
        depth[lock] += 1
        try:
            yield
        finally:
            depth[lock] -= 1
        return
    try:
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # a folder that cannot be opened is not locked: the write there fails anyway
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        depth[lock] = 1
        try:
            yield
        finally:
            del depth[lock]
    finally:
        os.close(fd)  # releases the flock
