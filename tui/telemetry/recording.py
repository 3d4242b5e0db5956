"""Recordings: readings, log events and guard actions as JSON lines, rotated to FILE.1 past the cap."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import time as time_module
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Annotated, BinaryIO, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from tui.sanitize import safe_line
from tui.telemetry.events import LogEvent
from tui.telemetry.reading import EndpointReading

FORMAT_VERSION = 1
MAX_LINE_CHARS = 1_000_000
DEFAULT_MAX_MB = 256  # `--record-max-mb`: a day of a busy server's log events is well under this
FLUSH_BYTES = 256 * 1024
FLUSH_INTERVAL_S = 1.0


class RecordedEndpoint(BaseModel):
    name: str
    url: str | None = None
    backend: str | None = None
    model: str | None = None
    acceptance_threshold: float | None = None


class HeaderRecord(BaseModel):
    kind: Literal["header"] = "header"
    version: int = FORMAT_VERSION
    time: float
    endpoints: list[RecordedEndpoint] = Field(default_factory=list)
    # True when this file was started by a rotation: it continues FILE.1
    continues: bool = False


class LogRecord(BaseModel):
    kind: Literal["log"] = "log"
    endpoint: str
    time: float
    event: LogEvent


class GuardLogRecord(BaseModel):  # one fallback-guard action (tui/advice/guard.py's `GuardRecord`)
    kind: Literal["guard"] = "guard"
    endpoint: str
    time: float
    action: str
    reason: str
    message: str = ""  # the alerts list's line (`GuardRecord.line()`)
    acceptance: float | None = None
    threshold: float | None = None
    diff: str = ""
    detail: str = ""


Record = Annotated[HeaderRecord | EndpointReading | LogRecord | GuardLogRecord, Field(discriminator="kind")]
_RECORD = TypeAdapter(Record)


class RecordingError(Exception):
    """A recording line that cannot be used; the message names file and line."""


def describe_os_error(error: BaseException) -> str:
    """One line for a failed write: "no space left on the device", the OS's words otherwise."""
    if isinstance(error, OSError):
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return "no space left on the device"
        return error.strerror or str(error)
    return str(error)


class RecordingWriter:
    """Appends records to a JSONL file: buffered, written off the event loop, rotated at `max_bytes`."""

    def __init__(
        self,
        path: str | Path,
        *,
        max_bytes: int | None = DEFAULT_MAX_MB * 1024 * 1024,
        on_rotate: Callable[[Path], None] | None = None,
        flush_interval_s: float = FLUSH_INTERVAL_S,
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes if max_bytes and max_bytes > 0 else None
        self.on_rotate = on_rotate
        self.flush_interval_s = flush_interval_s
        self.flush_bytes = FLUSH_BYTES if self.max_bytes is None else min(FLUSH_BYTES, self.max_bytes // 16)
        self.rotations = 0
        self._file: BinaryIO | None = None
        self._size = 0
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._endpoints: list[RecordedEndpoint] = []
        self._last_time = 0.0
        self._lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._error: OSError | None = None

    async def open(self, endpoints: Iterable[RecordedEndpoint], now: float | None = None) -> None:
        self._endpoints = list(endpoints)
        self._file = await asyncio.to_thread(self._open_file)
        header = HeaderRecord(time=now if now is not None else time_module.time(), endpoints=self._endpoints)
        self._add(header.model_dump_json(), header.time)
        await self.flush()  # the header is on disk at once: the file is a recording from the start
        self._flusher = asyncio.create_task(self._flush_periodically(), name=f"spectop-record {self.path}")

    async def write_reading(self, reading: EndpointReading) -> None:
        await self._write(reading.model_dump_json(), reading.time)

    async def write_log_event(self, endpoint: str, time: float, event: BaseModel) -> None:
        record = LogRecord.model_validate({"endpoint": endpoint, "time": time, "event": event})
        await self._write(record.model_dump_json(), record.time)

    async def write_guard(self, record: GuardLogRecord) -> None:
        await self._write(record.model_dump_json(), record.time)

    async def flush(self) -> None:
        """Write what is buffered, rotating first at the cap; a failed write raises now and later."""
        async with self._lock:
            if not self._buffer or self._file is None:
                return
            data = b"".join(self._buffer)
            self._buffer, self._buffered = [], 0
            try:
                rotated = await asyncio.to_thread(self._write_blocking, data)
            except OSError as error:
                self._error = error
                raise
        if rotated is not None:
            self.rotations += 1
            if self.on_rotate is not None:
                self.on_rotate(rotated)

    async def abandon(self) -> None:
        self._buffer, self._buffered = [], 0
        self._error = self._error or OSError("the recording was stopped after a failed write")
        await self.close()

    async def close(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        if self._file is None:
            return
        try:
            await self.flush()
        finally:
            file, self._file = self._file, None
            with contextlib.suppress(OSError):
                await asyncio.to_thread(file.close)

    async def _write(self, line: str, time: float) -> None:
        if self._file is None:
            raise RecordingError(f"{self.path}: recording is not open")
        if self._error is not None:
            raise self._error
        self._add(line, time)
        if self._buffered >= self.flush_bytes:
            await self.flush()

    def _add(self, line: str, time: float) -> None:
        data = (line + "\n").encode("utf-8")
        self._buffer.append(data)
        self._buffered += len(data)
        self._last_time = time

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_s)
            try:
                await self.flush()
            except OSError as error:  # disk full, file gone: the next write raises it
                self._error = error
                return

    def _open_file(self) -> BinaryIO:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file = open(self.path, "ab")  # noqa: SIM115 (closed in close())
        self._size = file.seek(0, os.SEEK_END)
        return file

    def _write_blocking(self, data: bytes) -> Path | None:
        assert self._file is not None
        rotated = None
        if self.max_bytes is not None and self._size > 0 and self._size + len(data) > self.max_bytes:
            rotated = self._rotate_blocking()
        self._file.write(data)
        self._file.flush()
        self._size += len(data)
        return rotated

    def _rotate_blocking(self) -> Path:
        assert self._file is not None
        self._file.close()
        rotated = rotated_part(self.path)
        self.path.replace(rotated)
        self._file = self._open_file()
        header = HeaderRecord(time=self._last_time, endpoints=self._endpoints, continues=True)
        data = (header.model_dump_json() + "\n").encode("utf-8")
        self._file.write(data)
        self._size += len(data)
        return rotated


def rotated_part(path: Path) -> Path:
    return path.with_name(f"{path.name}.1")


def parse_record(line: str, path: str | Path = "<recording>", line_number: int = 0) -> Record | None:
    """One line → a record; None for a blank line; RecordingError naming the line when it is bad."""
    text = line.strip()
    if not text:
        return None
    where = f"{path}:{line_number}"
    if len(text) > MAX_LINE_CHARS:
        raise RecordingError(f"{where}: line longer than {MAX_LINE_CHARS} characters")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordingError(f"{where}: not JSON: {error.msg} at column {error.colno}") from error
    try:
        return _RECORD.validate_python(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(item) for item in first["loc"]) or "record"
        # pydantic's message may quote the file (a tag it does not know): untrusted text
        raise RecordingError(safe_line(f"{where}: field {field}: {first['msg']}")) from error


async def read_records(
    path: str | Path, on_error: Callable[[RecordingError], None] | None = None
) -> AsyncIterator[Record]:
    """Every good record of a recording, in file order. Bad lines go to `on_error` (or raise)."""
    import aiofiles  # only here: not among the imports before the first frame

    async with aiofiles.open(path, encoding="utf-8", errors="replace") as file:
        line_number = 0
        async for line in file:
            line_number += 1
            try:
                record = parse_record(line, path, line_number)
            except RecordingError as error:
                if on_error is None:
                    raise
                on_error(error)
                continue
            if record is not None:
                yield record


def first_record(path: str | Path) -> Record | None:
    """The first record of a file, or None; RecordingError naming the line (blocking, one line at most)."""
    with open(path, encoding="utf-8", errors="replace") as file:
        for line_number, line in enumerate(iter(lambda: file.readline(MAX_LINE_CHARS + 1), ""), start=1):
            if len(line) > MAX_LINE_CHARS:
                raise RecordingError(f"{path}:{line_number}: line longer than {MAX_LINE_CHARS} characters")
            record = parse_record(line, path, line_number)
            if record is not None:
                return record
    return None


def check_recording(path: str | Path) -> None:
    """RecordingError("line N: why") unless the file starts like a spectop recording (blocking)."""
    try:
        record = first_record(path)
    except RecordingError as error:
        raise RecordingError("line " + str(error).removeprefix(f"{path}:")) from error  # "line 1: not JSON…"
    if record is None:
        raise RecordingError("no records in it")


def recording_parts(path: str | Path) -> list[Path]:
    """The files of a recording, oldest first: FILE.1 and FILE when FILE continues it, else FILE."""
    path = Path(path)
    try:
        record = first_record(path)
    except (OSError, RecordingError):
        return [path]
    rotated = rotated_part(path)
    continues = isinstance(record, HeaderRecord) and record.continues
    return [rotated, path] if continues and rotated.is_file() else [path]
