"""`ReplaySource`: a `--record` recording played back in its own time (pause, speed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import ClassVar

from tui.format import fmt_setting
from tui.sources.base import Source
from tui.sources.updates import (
    EndpointsNamed,
    Finished,
    GuardReplayed,
    LogLineArrived,
    Notice,
    ReadingArrived,
    Update,
)
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import (
    GuardLogRecord,
    HeaderRecord,
    LogRecord,
    Record,
    RecordingError,
    read_records,
    recording_parts,
)

REPLAY_SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
MAX_REPORTED_BAD_LINES = 5
MAX_GAP_S = 5.0  # a longer pause in the recording plays in this long


class ReplayClock:
    """Recording time as it plays back: speed factor (0 = as fast as possible), pause, current time."""

    def __init__(self, speed: float = 1.0) -> None:
        self.speed = speed
        self.paused = False
        self.now: float | None = None

    def time(self) -> float | None:
        """The time of the record played last (None before the first)."""
        return self.now


async def replay(
    path: str | Path, clock: ReplayClock, on_error: Callable[[RecordingError], None] | None = None
) -> AsyncIterator[Record]:
    """Records paced by their times, a rotated set from its oldest part; gaps cut to `MAX_GAP_S`."""
    previous: float | None = None
    parts = await asyncio.to_thread(recording_parts, path)
    for part in parts:
        async for record in read_records(part, on_error):
            gap_left = 0.0 if previous is None else max(0.0, record.time - previous)
            while True:
                if clock.paused:
                    await asyncio.sleep(0.05)
                    continue
                if clock.speed <= 0 or gap_left <= 0:
                    break
                real_left = min(gap_left / clock.speed, MAX_GAP_S)
                gap_left = real_left * clock.speed
                step = min(real_left, 0.1)
                await asyncio.sleep(step)
                gap_left -= step * clock.speed
            previous = record.time
            clock.now = record.time
            yield record


class ReplaySource(Source):
    has_speed: ClassVar[bool] = True

    def __init__(self, path: str | Path, speed: float = 1.0) -> None:
        self.path = Path(path)
        self.replay_clock = ReplayClock(speed)
        self.clock = self.replay_clock
        self.bad_lines = 0

    async def updates(self) -> AsyncIterator[Update]:
        said: list[Update] = []

        def bad_line(error: RecordingError) -> None:
            self.bad_lines += 1
            if self.bad_lines <= MAX_REPORTED_BAD_LINES:
                said.append(Notice(str(error), "warning", title="skipped a bad line"))

        async for record in replay(self.path, self.replay_clock, on_error=bad_line):
            while said:
                yield said.pop(0)
            if isinstance(record, HeaderRecord):
                yield EndpointsNamed(record.endpoints)
            elif isinstance(record, EndpointReading):
                yield ReadingArrived(record)
            elif isinstance(record, LogRecord):
                yield LogLineArrived(record.endpoint, record.time, record.event.line, [record.event])
            elif isinstance(record, GuardLogRecord):
                yield GuardReplayed(record)
        while said:
            yield said.pop(0)
        self.finished = True
        yield Finished()

    @property
    def paused(self) -> bool:
        return self.replay_clock.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self.replay_clock.paused = value

    def change_speed(self, step: int) -> None:
        current = min(REPLAY_SPEEDS, key=lambda speed: abs(speed - self.replay_clock.speed))
        index = max(0, min(len(REPLAY_SPEEDS) - 1, REPLAY_SPEEDS.index(current) + step))
        self.replay_clock.speed = REPLAY_SPEEDS[index]

    def status(self) -> list[str]:
        speed = f"replay {self.path.name} ×{fmt_setting(self.replay_clock.speed)}"
        return [speed, "ended"] if self.finished else [speed]
