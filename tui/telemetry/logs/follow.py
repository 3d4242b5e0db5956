"""Following a log as events: `LogTailer` + `LogParser`, flushing an open traceback when the log is quiet."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from tui.telemetry.events import LogEvent
from tui.telemetry.logs.dispatch import LogParser
from tui.telemetry.tailer import LogTailer

QUEUE_LINES = 1_000  # with 16 KB lines at most, the queue holds ≤ 16 MB


async def follow_events(
    path: str | Path,
    parser: LogParser,
    *,
    from_start: bool = False,
    poll_interval_s: float = 0.25,
    idle_flush_s: float = 1.0,
    on_notice: Callable[[str], None] | None = None,
) -> AsyncIterator[tuple[str | None, list[LogEvent]]]:
    """(line, its events) for every new line, (None, held-back events) after `idle_flush_s` of quiet;
    until cancelled. A line the parser raised on is counted (`feed_guarded`), not fatal."""
    tailer = LogTailer(path, from_start=from_start, poll_interval_s=poll_interval_s, on_notice=on_notice)
    queue: asyncio.Queue[str] = asyncio.Queue(maxsize=QUEUE_LINES)

    async def read() -> None:
        async for line in tailer.lines():
            await queue.put(line)

    reader = asyncio.create_task(read(), name=f"spectop-tail {path}")
    try:
        while True:
            try:
                # Not wait_for: on 3.11 it drops a cancel that lands as the line arrives (never ending).
                async with asyncio.timeout(idle_flush_s):
                    line = await queue.get()
            except TimeoutError:
                if reader.done():
                    reader.result()  # re-raise whatever stopped the reader
                    return
                if parser.pending:
                    yield None, parser.flush()
                continue
            yield line, parser.feed_guarded(line)  # the safety net: a line that raised is counted
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
