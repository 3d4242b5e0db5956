"""Async log follower with `tail -F` semantics: by inode, woken by inotify (on the folder, through ctypes: no
dependency), polling as the fallback (and where `open_watch` cannot watch)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import itertools
import os
import re
import select
import stat
import struct
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiofiles

FOLLOW_CHUNK_BYTES = 256 * 1024
STEP_BYTES = 4 * FOLLOW_CHUNK_BYTES  # read at most this much per step (bounds memory)
READ_ALL_CHUNK_BYTES = 1024 * 1024
FINGERPRINT_BYTES = 64
MIN_WAKE_INTERVAL_S = 0.02  # inotify wake-ups at most this often (a busy log is read in batches)
WATCH_RETRY_S = 5.0  # a folder that could not be watched is tried again this often
ROTATED_SLACK_S = 2.0  # file time granularity (coarse kernel clock, FAT, NFS) when finding rotated files
MAX_ROTATED_FOUND = 16  # rotated files read from one rotation at most
MAX_QUEUED = 64  # files held to be read at most (a reader far behind a rotation storm)
LINGER_S = 5.0  # a rotated file is still read until it has been quiet this long
MAX_LINGERING = 8  # rotated files still read at once at most (the oldest is let go first)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_SIBLING = os.O_RDONLY | O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
ROTATED_SUFFIX = re.compile(r"[.-]\d")  # what follows the log's name in a rotated file's name
NUMBERED_SUFFIX = re.compile(r"[.-](\d{1,6})")  # NAME.1, NAME.2 …: the larger the number, the older the file
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip", ".z", ".lzma", ".br")
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
# Files created, renamed or deleted wake the tailer at once. Not appends (IN_MODIFY): a busy log would wake
# it thousands of times a second, for far more CPU than polling.
WATCH_MASK = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of NUL-padded name


class DirectoryWatch:
    def __init__(
        self, fd: int, prefix: bytes, loop: asyncio.AbstractEventLoop, on_change: Callable[[], None]
    ) -> None:
        self._fd = fd
        self._prefix = prefix
        self._loop = loop
        self._on_change = on_change
        self._woken = asyncio.Event()
        self._stop_read, self._stop_write = os.pipe()
        self._thread = threading.Thread(target=self._run, name="spectop-dirwatch", daemon=True)
        try:
            self._thread.start()
        except RuntimeError:
            os.close(self._stop_read)
            os.close(self._stop_write)
            raise

    def _run(self) -> None:
        poller = select.poll()
        for fd in (self._fd, self._stop_read):
            poller.register(fd, select.POLLIN)
        while True:
            ready = poller.poll()
            if any(fd == self._stop_read for fd, _ in ready):
                return
            if self._changed():
                with contextlib.suppress(OSError):  # a file gone as it was opened: the next step looks again
                    self._on_change()
                try:
                    self._loop.call_soon_threadsafe(self._woken.set)
                except RuntimeError:  # the loop closed first
                    return

    def _changed(self) -> bool:
        try:
            data = os.read(self._fd, 64 * 1024)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # the descriptor broke: wake up, the tailer keeps polling
            return True
        offset = 0
        changed = False
        while offset + _EVENT.size <= len(data):
            _, mask, _, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            changed = changed or bool(mask & (IN_Q_OVERFLOW | IN_IGNORED)) or name.startswith(self._prefix)
        return changed

    async def wait(self, timeout: float) -> bool:
        """True when woken by a change, False after `timeout`."""
        try:
            # Not wait_for: on 3.11 it drops a cancel that lands as the wake-up comes (never ending).
            async with asyncio.timeout(timeout):
                await self._woken.wait()
        except TimeoutError:
            return False
        finally:
            self._woken.clear()
        return True

    def close(self) -> None:
        if self._fd >= 0:
            os.write(self._stop_write, b"x")
            self._thread.join()
            for fd in (self._fd, self._stop_read, self._stop_write):
                os.close(fd)
            self._fd = -1


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc, without a search
    except OSError:
        return None
    return libc if hasattr(libc, "inotify_init1") else None


def open_watch(path: Path, on_change: Callable[[], None] = lambda: None) -> DirectoryWatch | None:
    """A watch on the folder of `path` for names starting with its name (`on_change`: in its thread)."""
    libc = _libc()
    if libc is None:
        return None
    loop = asyncio.get_running_loop()
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        return None
    folder = os.fsencode(path.parent if str(path.parent) else Path("."))
    if libc.inotify_add_watch(fd, folder, WATCH_MASK) < 0:
        os.close(fd)
        return None
    try:
        return DirectoryWatch(fd, os.fsencode(path.name), loop, on_change)
    except (OSError, RuntimeError):  # no pipe or thread to spare
        os.close(fd)
        return None


class LineSplitter:
    """Bytes in, complete decoded lines out; holds at most `max_line_bytes` of a partial line."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max(1, max_line_bytes)
        self._partial = bytearray()
        self._dropping = False  # inside an over-long line whose first part was already given out

    def feed(self, chunk: bytes) -> list[str]:
        if b"\0" in chunk:  # a copytruncate's hole (a writer not in append mode), not text
            chunk = chunk.replace(b"\0", b"")
        pieces = chunk.split(b"\n")
        remainder = pieces.pop()
        lines: list[str] = []
        for piece in pieces:
            if self._dropping:
                self._dropping = False
                continue
            if self._partial:
                self._partial += piece[: self.max_line_bytes]
                piece = bytes(self._partial)
                self._partial.clear()
            lines.append(_decode(piece[: self.max_line_bytes]))
        if remainder and not self._dropping:
            self._partial += remainder[: self.max_line_bytes - len(self._partial) + 1]
            if len(self._partial) > self.max_line_bytes:
                lines.append(_decode(bytes(self._partial[: self.max_line_bytes])))
                self._partial.clear()
                self._dropping = True
        return lines

    def flush(self) -> str | None:
        """The held partial line, if any (end of file or rotation)."""
        dropping, self._dropping = self._dropping, False
        line = None if dropping or not self._partial else _decode(bytes(self._partial))
        self._partial.clear()
        return line


def _decode(data: bytes) -> str:
    return data.removesuffix(b"\r").decode("utf-8", errors="replace")


Identity = tuple[int, int]  # (st_dev, st_ino)
_SOURCE_KEYS = itertools.count()


@dataclass
class _Source:
    """One open file: where we are in it and what its bytes looked like."""

    fd: int
    identity: Identity
    name: str
    key: int = field(default_factory=lambda: next(_SOURCE_KEYS))
    position: int = 0
    head: bytes = b""  # its first bytes (up to FINGERPRINT_BYTES) as read
    recent: bytes = b""  # the bytes just before `position` (up to FINGERPRINT_BYTES)

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self.fd, size, offset) if size > 0 else b""

    def remember(self, chunk: bytes) -> None:
        if len(self.head) < FINGERPRINT_BYTES and self.position < FINGERPRINT_BYTES:
            self.head = (self.head + chunk)[:FINGERPRINT_BYTES]
        self.position += len(chunk)
        self.recent = (self.recent + chunk[-FINGERPRINT_BYTES:])[-FINGERPRINT_BYTES:]

    def position_at_end(self) -> None:
        self.position = os.fstat(self.fd).st_size
        self.head = self.pread(FINGERPRINT_BYTES, 0)
        start = max(0, self.position - FINGERPRINT_BYTES)
        self.recent = self.pread(self.position - start, start)

    def rewritten(self) -> bool:
        """Truncated (copytruncate), even when the new content already grew past our offset."""
        if os.fstat(self.fd).st_size < self.position:
            return True
        if self.head and self.pread(len(self.head), 0) != self.head:
            return True
        start = self.position - len(self.recent)
        return bool(self.recent) and self.pread(len(self.recent), start) != self.recent

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class _Sibling:
    fd: int  # open while one look lasts: the file listed, whatever name it is renamed to meanwhile
    path: Path
    status: os.stat_result
    head: bytes  # first bytes: an inode number reused by a new file is not the file we knew

    @property
    def seen(self) -> tuple[bytes, int]:
        return self.head, self.status.st_mtime_ns


# What a step hands to the async side, in order: (what, source key, bytes), each source split on its own.
DATA = "data"
END = "end"  # done with that file: a held partial line will not be completed
RESTART = "restart"  # the same file was truncated: drop the partial line


@dataclass
class _Step:
    items: list[tuple[str, int, bytes]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    more: bool = False  # stopped at the byte budget: step again without waiting


class _Follower:
    """The blocking half of `LogTailer.lines()`: one `step()` at a time, in a worker thread; `capture()`
    from the folder watch's thread takes hold of new files meanwhile (each call holds `lock`)."""

    def __init__(self, path: Path, from_start: bool) -> None:
        self.path = path
        self.from_start = from_start
        self.current: _Source | None = None
        self.queue: list[_Source] = []  # files still to read after `current`, the live one last
        # rotated files, drained, still read until quiet for LINGER_S (the server writes on until it reopens)
        self.lingering: list[tuple[_Source, float]] = []
        # rotated siblings accounted for → their first bytes and mtime (an inode number may be reused)
        self.known: dict[Identity, tuple[bytes, int]] = {}
        self.verified_at = time.time()  # when the path last held `current` (or nothing new)
        self.folder_changed = 0  # the folder's mtime (ns) when looked at for rotated files, path gone
        self.started = False
        self.said_waiting = False
        self.said_gone = False
        self.notices: list[str] = []  # said by the next step
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            for source in self._held():
                source.close()
            self.current, self.queue, self.lingering = None, [], []

    def _held(self) -> list[_Source]:
        current = [self.current] if self.current is not None else []
        return [*current, *self.queue, *(source for source, _ in self.lingering)]

    def capture(self) -> None:
        """Take hold of the files made or rotated since the last look (read later through the fd held)."""
        with self.lock:
            if self.current is not None and len(self.queue) < MAX_QUEUED:
                self._look()

    def step(self) -> _Step:
        with self.lock:
            step = self._step()
            step.notices, self.notices = self.notices, []
        return step

    def _step(self) -> _Step:
        step = _Step()
        budget = STEP_BYTES
        if self.current is None and not self._open_first(step):
            return step
        assert self.current is not None
        budget = self._read_lingering(step, budget)
        while budget > 0:
            if not self.queue and self.current.position and self.current.rewritten():
                self.notices.append(f"{self.path} was truncated; reading it from its start")
                step.items.append((RESTART, self.current.key, b""))
                self.current.position, self.current.head, self.current.recent = 0, b"", b""
            budget = self._read(self.current, step, budget)
            if budget <= 0:
                break
            if self.queue:  # `current` is a rotated file, now drained: on to the next one
                self.lingering.append((self.current, time.monotonic() + LINGER_S))
                self.current = self.queue.pop(0)
                continue
            self._look()
            if not self.queue:
                return step
        step.more = True
        return step

    def _read_lingering(self, step: _Step, budget: int) -> int:
        now = time.monotonic()
        still: list[tuple[_Source, float]] = []
        for index, (source, until) in enumerate(self.lingering):
            before = source.position
            budget = self._read(source, step, budget)
            if source.position > before:
                until = now + LINGER_S
            if now < until and len(self.lingering) - index <= MAX_LINGERING:
                still.append((source, until))
            else:
                step.items.append((END, source.key, b""))
                self.known[source.identity] = (source.head, os.fstat(source.fd).st_mtime_ns)
                source.close()
        self.lingering = still
        return budget

    def _read(self, source: _Source, step: _Step, budget: int) -> int:
        while budget > 0:
            chunk = os.pread(source.fd, min(FOLLOW_CHUNK_BYTES, budget), source.position)
            if not chunk:
                break
            source.remember(chunk)
            step.items.append((DATA, source.key, chunk))
            budget -= len(chunk)
        return budget

    def _open_first(self, step: _Step) -> bool:
        source = self._open_path()
        if source is None:
            if not self.said_waiting:
                self.said_waiting = True
                self.notices.append(f"waiting for {self.path} to appear")
            self.started = True
            return False
        siblings = self._siblings(exclude={source.identity})
        self.known = {identity: sibling.seen for identity, sibling in siblings.items()}
        for sibling in siblings.values():
            os.close(sibling.fd)
        if not self.started and not self.from_start:
            source.position_at_end()
        elif self.said_waiting:
            self.notices.append(f"{self.path} has appeared; following it")
        self.started = True
        self.current = source
        self.verified_at = time.time()
        return True

    def _look(self) -> None:
        """Queue what came after the last file held: a new file at the path, and the rotated files found
        beside it that were made and rotated away in between (also while the path stays empty)."""
        assert self.current is not None
        last = self.queue[-1] if self.queue else self.current
        held = {source.identity for source in self._held()}
        new: _Source | None = None
        try:
            status = os.stat(self.path)
        except OSError:
            if not self.said_gone:
                self.said_gone = True
                self.notices.append(f"{self.path} has gone; reading what is open, waiting for a new file")
            if not self._folder_changed():
                return
        else:
            if (status.st_dev, status.st_ino) == last.identity:
                self.verified_at = time.time()
                return
            if stat.S_ISDIR(status.st_mode):
                return
            new = self._open_path()
            if new is None or new.identity in held:
                if new is not None:
                    new.close()
                return
        siblings = self._siblings(held | ({new.identity} if new is not None else set()))
        missed = self._missed(siblings)
        if new is not None:
            self.notices.append(f"{self.path} was replaced (rotated); following the new file")
            self.said_gone = False
            missed.append(new)
        elif not missed:
            return
        self.queue.extend(missed)
        # what is there now: never read again (unless it changes); the files held are once let go
        self.known = {identity: sibling.seen for identity, sibling in siblings.items()}
        self.verified_at = time.time()

    def _folder_changed(self) -> bool:
        try:
            changed = os.stat(self.path.parent).st_mtime_ns
        except OSError:
            return False
        recent = time.time_ns() - changed < ROTATED_SLACK_S * 1e9
        if changed == self.folder_changed and not recent:
            return False
        self.folder_changed = changed
        return True

    def _missed(self, siblings: dict[Identity, _Sibling]) -> list[_Source]:
        """Rotated files that appeared and were rotated away between two looks, oldest first (read through
        the descriptors `_siblings` opened; the others are closed)."""
        found: list[tuple[tuple[int, int, str], _Source]] = []
        since = self.verified_at - ROTATED_SLACK_S
        for identity, sibling in siblings.items():
            known = self.known.get(identity)
            status = sibling.status
            if (
                (known is not None and known[1] == sibling.seen[1] and sibling.head.startswith(known[0]))
                or max(status.st_mtime, status.st_ctime) < since  # an old file that happens to be new to us
                or len(found) >= MAX_ROTATED_FOUND
            ):  # (the first: seen before, renamed along since, or read already)
                os.close(sibling.fd)
                continue
            age = self._age(sibling.path, status.st_mtime_ns)
            found.append((age, _Source(sibling.fd, identity, str(sibling.path))))
        return [source for _, source in sorted(found, key=lambda item: item[0])]

    def _age(self, path: Path, mtime_ns: int) -> tuple[int, int, str]:
        """Sort key, oldest first: by mtime, then (files written in one tick of a coarse clock) by name:
        NAME.2 before NAME.1, NAME-20261201 before NAME-20261202."""
        suffix = path.name[len(self.path.name) :]
        numbered = NUMBERED_SUFFIX.fullmatch(suffix)
        return (mtime_ns, -int(numbered[1]), "") if numbered else (mtime_ns, 0, suffix)

    def _siblings(self, exclude: set[Identity]) -> dict[Identity, _Sibling]:
        """Regular files next to the path named like its rotations, not compressed: NAME.1 (logrotate,
        RotatingFileHandler), NAME-20261201 (dateext), NAME.2026-12-01 (TimedRotatingFileHandler)."""
        found: dict[Identity, _Sibling] = {}
        base = self.path.name
        try:
            entries = list(os.scandir(self.path.parent))
        except OSError:
            return found
        for entry in entries:
            name = entry.name
            suffix = name[len(base) :] if name.startswith(base) else ""
            if not ROTATED_SUFFIX.match(suffix) or name.lower().endswith(COMPRESSED_SUFFIXES):
                continue
            try:  # what the name is now, held open: a rename after the listing cannot swap files under us
                fd = os.open(entry.path, O_SIBLING)
            except OSError:
                continue
            try:
                status = os.fstat(fd)
                identity = (status.st_dev, status.st_ino)
                if stat.S_ISREG(status.st_mode) and identity not in exclude and identity not in found:
                    found[identity] = _Sibling(
                        fd, Path(entry.path), status, os.pread(fd, FINGERPRINT_BYTES, 0)
                    )
                    continue
            except OSError:
                pass
            os.close(fd)
        return found

    def _open_path(self) -> _Source | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | O_CLOEXEC)
        except OSError:  # missing, no permission yet: poll again
            return None
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):  # a directory at the path: poll again
            os.close(fd)
            return None
        return _Source(fd, (status.st_dev, status.st_ino), str(self.path))


class LogTailer:
    """Follow (`lines`) or read once (`read_all`) a log file, line by line."""

    def __init__(
        self,
        path: str | Path,
        *,
        from_start: bool = False,
        poll_interval_s: float = 0.25,
        max_line_bytes: int = 16384,
        on_notice: Callable[[str], None] | None = None,
        watch: bool = True,
    ) -> None:
        self.path = Path(path)
        self.from_start = from_start
        self.poll_interval_s = max(0.001, poll_interval_s)
        self.max_line_bytes = max_line_bytes
        self.on_notice = on_notice  # "waiting for FILE to appear", "FILE was truncated; …"
        self.watch = watch  # inotify wake-ups when available (polling either way)

    async def read_all(self) -> AsyncIterator[str]:
        """Every line of the file once, then stop. Raises FileNotFoundError if there is no file."""
        splitter = LineSplitter(self.max_line_bytes)
        async with aiofiles.open(self.path, "rb") as handle:
            while chunk := await handle.read(READ_ALL_CHUNK_BYTES):
                for line in splitter.feed(chunk):
                    yield line
        if (tail := splitter.flush()) is not None:
            yield tail

    async def lines(self) -> AsyncIterator[str]:
        """Lines as they are written, forever (until the task is cancelled)."""
        splitters: dict[int, LineSplitter] = {}  # one per open file: lines never mix across files
        follower = _Follower(self.path, self.from_start)
        watch: DirectoryWatch | None = None
        watch_tried = -WATCH_RETRY_S
        loop = asyncio.get_running_loop()
        try:
            while True:
                started = loop.time()
                if watch is None and self.watch and started - watch_tried >= WATCH_RETRY_S:
                    watch_tried = started  # before the step: files are held while its lines are read
                    watch = open_watch(self.path, follower.capture)
                step = await asyncio.to_thread(follower.step)
                for notice in step.notices:
                    if self.on_notice is not None:
                        self.on_notice(notice)
                for what, key, data in step.items:
                    if what == DATA:
                        if key not in splitters:
                            splitters[key] = LineSplitter(self.max_line_bytes)
                        for line in splitters[key].feed(data):
                            yield line
                    elif (
                        what == END and key in splitters and (tail := splitters.pop(key).flush()) is not None
                    ):
                        yield tail
                    elif what == RESTART and key in splitters:
                        splitters[key].flush()  # the partial line is dropped
                if step.more:
                    continue
                if watch is None:
                    await asyncio.sleep(self.poll_interval_s)
                elif await watch.wait(self.poll_interval_s):
                    await asyncio.sleep(max(0.0, started + MIN_WAKE_INTERVAL_S - loop.time()))
        finally:
            if watch is not None:
                watch.close()
            follower.close()
