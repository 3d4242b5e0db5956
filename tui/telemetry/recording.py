"""Recordings: every scrape's figures and every log event as JSON lines, and reading them back.

One JSON object per line, told apart by `kind`:
- `header`: written when recording starts (a file may hold several sessions, appended);
- `reading`: one scrape of one endpoint (the fields of EndpointReading, figures by FIGURE_NAMES);
- `log`: one log event of one endpoint, with the time spectop read it.
Times are Unix seconds. A bad line is reported with its file and line number and skipped by the replayer.
"""

from __future__ import annotations

import asyncio
import json
import time as time_module
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import aiofiles
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from tui.telemetry.events import LogEvent
from tui.telemetry.figures import Figures

FORMAT_VERSION = 1
MAX_LINE_CHARS = 1_000_000


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


class ReadingRecord(BaseModel):
    """One scrape. Field names match EndpointReading, so the dashboard can show either."""

    kind: Literal["reading"] = "reading"
    name: str
    url: str | None = None
    time: float
    up: bool
    error: str | None = None
    backend: str | None = None
    model: str | None = None
    window_s: float | None = None
    figures: Figures = Field(default_factory=Figures)
    consecutive_failures: int = 0


class LogRecord(BaseModel):
    kind: Literal["log"] = "log"
    endpoint: str
    time: float
    event: LogEvent


Record = Annotated[HeaderRecord | ReadingRecord | LogRecord, Field(discriminator="kind")]
_RECORD = TypeAdapter(Record)


class RecordingError(Exception):
    """A recording line that cannot be used; the message names file and line."""


def reading_record(reading: object) -> ReadingRecord:
    """A record from anything shaped like EndpointReading (attributes, not a particular class)."""
    figures = getattr(reading, "figures", None)
    if not isinstance(figures, Figures):
        figures = Figures.model_validate(figures or {})
    return ReadingRecord(
        name=str(reading.name),  # type: ignore[attr-defined]
        url=getattr(reading, "url", None),
        time=float(reading.time),  # type: ignore[attr-defined]
        up=bool(reading.up),  # type: ignore[attr-defined]
        error=getattr(reading, "error", None),
        backend=getattr(reading, "backend", None),
        model=getattr(reading, "model", None),
        window_s=getattr(reading, "window_s", None),
        figures=figures,
        consecutive_failures=int(getattr(reading, "consecutive_failures", 0) or 0),
    )


class RecordingWriter:
    """Appends records to a JSONL file. Writes are small and buffered by the OS; flushed per line."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: Any = None

    async def open(self, endpoints: Iterable[RecordedEndpoint], now: float | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = await aiofiles.open(self.path, "a", encoding="utf-8")
        header = HeaderRecord(time=now if now is not None else time_module.time(), endpoints=list(endpoints))
        await self._write(header)

    async def write_reading(self, reading: object) -> None:
        await self._write(reading_record(reading))

    async def write_log_event(self, endpoint: str, time: float, event: BaseModel) -> None:
        await self._write(LogRecord.model_validate({"endpoint": endpoint, "time": time, "event": event}))

    async def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            await file.close()

    async def _write(self, record: BaseModel) -> None:
        if self._file is None:
            raise RecordingError(f"{self.path}: recording is not open")
        await self._file.write(record.model_dump_json() + "\n")
        await self._file.flush()


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
        raise RecordingError(f"{where}: field {field}: {first['msg']}") from error


async def read_records(
    path: str | Path, on_error: Callable[[RecordingError], None] | None = None
) -> AsyncIterator[Record]:
    """Every good record of a recording, in file order. Bad lines go to `on_error` (or raise)."""
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


class ReplayClock:
    """Recording time as it plays back: speed factor (0 = as fast as possible), pause, current time."""

    def __init__(self, speed: float = 1.0) -> None:
        self.speed = speed
        self.paused = False
        self.now: float | None = None


async def replay(
    path: str | Path,
    clock: ReplayClock,
    on_error: Callable[[RecordingError], None] | None = None,
    max_gap_s: float = 5.0,
) -> AsyncIterator[Record]:
    """Yield records paced by their times; speed and pause changes apply at once.

    A gap longer than `max_gap_s` of real time (a recording left idle overnight) is shortened.
    """
    previous: float | None = None
    async for record in read_records(path, on_error):
        gap_left = 0.0 if previous is None else max(0.0, record.time - previous)
        while True:
            if clock.paused:
                await asyncio.sleep(0.05)
                continue
            if clock.speed <= 0 or gap_left <= 0:
                break
            real_left = min(gap_left / clock.speed, max_gap_s)
            gap_left = real_left * clock.speed
            step = min(real_left, 0.1)
            await asyncio.sleep(step)
            gap_left -= step * clock.speed
        previous = record.time
        clock.now = record.time
        yield record
