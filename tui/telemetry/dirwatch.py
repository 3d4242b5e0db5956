"""Prompt wake-ups for the log tailer: Linux inotify on a folder through ctypes (no dependency); `open_watch`
returns None where it cannot watch, and polling stays the fallback."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import os
import select
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path

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
