"""Cancelling a log follower always ends it, also when the cancel lands as a line (or a wake-up) arrives
(with `asyncio.wait_for` on 3.11, the dashboard's shutdown once waited for one forever)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cancel_turns import ENDED_WITHIN_S, TURNS, cancel_ends, loop_turns

from tui.telemetry.dirwatch import open_watch
from tui.telemetry.logs import LogParser
from tui.telemetry.logs import follow as follow_module
from tui.telemetry.logs.follow import follow_events


class _HandFedTailer:
    """Stands in for `LogTailer`: the test hands it lines (no file, no worker thread)."""

    def __init__(self) -> None:
        self.source: asyncio.Queue[str] = asyncio.Queue()

    async def lines(self) -> AsyncIterator[str]:
        while True:
            yield await self.source.get()


async def test_follow_events_ends_when_cancelled_as_a_line_arrives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    still_running = []
    for turns in TURNS:
        tailer = _HandFedTailer()
        monkeypatch.setattr(follow_module, "LogTailer", lambda *args, tailer=tailer, **options: tailer)

        async def consume() -> None:
            async for _ in follow_events(tmp_path / "server.log", LogParser(), idle_flush_s=60.0):
                pass

        task = asyncio.create_task(consume())
        await loop_turns(5)  # the follower waits for a line
        tailer.source.put_nowait("srv  log_server_r: request: GET /health 127.0.0.1 200")
        await loop_turns(turns)
        if not await cancel_ends(task):
            still_running.append(turns)
    assert still_running == [], f"cancelled {still_running} loop turns after a line: kept following"


async def test_directory_watch_wait_ends_when_cancelled_as_the_log_changes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    watch = open_watch(log)
    if watch is None:
        pytest.skip("no inotify here")
    swallowed = []
    try:
        for turns in TURNS:
            task = asyncio.create_task(watch.wait(60.0))
            await loop_turns(5)  # waiting for a change
            # A rotated file appears (a new name each time): inotify makes the watch readable at once.
            log.with_name(f"{log.name}.{turns}").write_text("rotated\n")
            await loop_turns(turns)
            if not task.cancel():
                assert task.result() is True  # woken before the cancel came: nothing to swallow
                continue
            await asyncio.wait({task}, timeout=ENDED_WITHIN_S)
            if not task.cancelled():
                swallowed.append(turns)
    finally:
        watch.close()
    assert swallowed == [], f"cancelled {swallowed} loop turns after the change: the wait returned"
