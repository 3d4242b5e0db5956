"""Async log follower with `tail -F` semantics, by polling (no inotify dependency).

* Starts at the end of the file (or at its start with `from_start=True`); a file that does not
  exist yet is waited for and then read from its start.
* Rotation (rename, then a new file at the path): the old file is drained, then the new one is
  read from its start. Deletion: the open file is kept until a file appears at the path again.
* Truncation in place (copytruncate): reading restarts at offset 0.
* Lines are capped at `max_line_bytes` (the rest of an over-long line is dropped), undecodable bytes
  become U+FFFD, and a partial last line is held until its newline arrives. Memory stays bounded by
  the cap and the read chunk size whatever the file holds.
* Every read goes through aiofiles and every wait is `asyncio.sleep`, so nothing blocks the loop;
  the follow loop runs until its task is cancelled.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import aiofiles
import aiofiles.os
from aiofiles.threadpool.binary import AsyncBufferedReader

_fstat = aiofiles.os.wrap(os.fstat)  # in a worker thread, like every other file call here

FOLLOW_CHUNK_BYTES = 256 * 1024
READ_ALL_CHUNK_BYTES = 1024 * 1024


class LineSplitter:
    """Bytes in, complete decoded lines out; holds at most `max_line_bytes` of a partial line."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max(1, max_line_bytes)
        self._partial = bytearray()
        self._dropping = False  # inside an over-long line whose first part was already given out

    def feed(self, chunk: bytes) -> list[str]:
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
        """The held partial line, if any (the file will not complete it: end of file or rotation)."""
        dropping, self._dropping = self._dropping, False
        if not self._partial or dropping:
            self._partial.clear()
            return None
        line = _decode(bytes(self._partial))
        self._partial.clear()
        return line

    def reset(self) -> None:
        self._partial.clear()
        self._dropping = False


def _decode(data: bytes) -> str:
    if data.endswith(b"\r"):
        data = data[:-1]
    return data.decode("utf-8", errors="replace")


class LogTailer:
    """Follow (`lines`) or read once (`read_all`) a log file, line by line."""

    def __init__(
        self,
        path: str | Path,
        *,
        from_start: bool = False,
        poll_interval_s: float = 0.25,
        max_line_bytes: int = 16384,
    ) -> None:
        self.path = Path(path)
        self.from_start = from_start
        self.poll_interval_s = max(0.001, poll_interval_s)
        self.max_line_bytes = max_line_bytes

    async def read_all(self) -> AsyncIterator[str]:
        """Every line of the file once, then stop. Raises FileNotFoundError if there is no file."""
        splitter = LineSplitter(self.max_line_bytes)
        async with aiofiles.open(self.path, "rb") as handle:
            while chunk := await handle.read(READ_ALL_CHUNK_BYTES):
                for line in splitter.feed(chunk):
                    yield line
        tail = splitter.flush()
        if tail is not None:
            yield tail

    async def lines(self) -> AsyncIterator[str]:
        """Lines as they are written, forever (until the task is cancelled)."""
        splitter = LineSplitter(self.max_line_bytes)
        handle: AsyncBufferedReader | None = None
        identity: tuple[int, int] | None = None
        position = 0
        at_start_of_run = True
        try:
            while True:
                if handle is None:
                    handle = await self._open()
                    if handle is None:
                        at_start_of_run = False  # appeared later: read it from its start
                        await asyncio.sleep(self.poll_interval_s)
                        continue
                    status = await _fstat(handle.fileno())
                    identity = (status.st_dev, status.st_ino)
                    position = 0
                    if at_start_of_run and not self.from_start:
                        position = await handle.seek(0, os.SEEK_END)
                    at_start_of_run = False
                chunk = await handle.read(FOLLOW_CHUNK_BYTES)
                if chunk:
                    position += len(chunk)
                    for line in splitter.feed(chunk):
                        yield line
                    continue
                status_now = await self._stat()
                if status_now is None:  # deleted: wait for a new file, keep what is open
                    await asyncio.sleep(self.poll_interval_s)
                    continue
                if (status_now.st_dev, status_now.st_ino) != identity:  # rotated
                    while chunk := await handle.read(FOLLOW_CHUNK_BYTES):  # written just before the rename
                        for line in splitter.feed(chunk):
                            yield line
                    tail = splitter.flush()
                    if tail is not None:
                        yield tail
                    await handle.close()
                    handle = None
                    continue
                if status_now.st_size < position:  # truncated in place (copytruncate)
                    splitter.reset()
                    position = await handle.seek(0)
                    continue
                await asyncio.sleep(self.poll_interval_s)
        finally:
            if handle is not None:
                await handle.close()

    async def _open(self) -> AsyncBufferedReader | None:
        try:
            return await aiofiles.open(self.path, "rb")  # type: ignore[return-value]
        except OSError:  # missing, a directory, no permission yet: poll again
            return None

    async def _stat(self) -> os.stat_result | None:
        try:
            return await aiofiles.os.stat(self.path)
        except OSError:
            return None
