"""The dashboard's sources without Textual: replay, a live log followed to its end, a fleet source."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fleet.fake_fleet import ScriptedPoller, fleet_settings, scripted_readings
from tests.telemetry.cancel_turns import TURNS, cancel_ends, loop_turns
from tui.board import Board
from tui.settings import EndpointSettings, Settings
from tui.sources import LiveSource, ReplaySource
from tui.sources.fleet import FleetSource
from tui.sources.updates import EndpointsNamed, Finished, LogLineArrived, ReadingArrived, Update
from tui.telemetry.events import ErrorEvent
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import HeaderRecord, LogRecord, RecordedEndpoint


async def test_a_replay_yields_the_recording_in_order_then_finished(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    records = [
        HeaderRecord(time=1.0, endpoints=[RecordedEndpoint(name="a", url="http://127.0.0.1:9")]),
        EndpointReading(name="a", time=2.0, up=True),
        LogRecord(endpoint="a", time=3.0, event=ErrorEvent(category="oom", line="CUDA out of memory")),
    ]
    path.write_text("".join(record.model_dump_json() + "\n" for record in records) + "garbage\n")
    source = ReplaySource(path, speed=0)
    updates = [update async for update in source.updates()]
    kinds = [type(update).__name__ for update in updates]
    assert kinds == ["EndpointsNamed", "ReadingArrived", "LogLineArrived", "Notice", "Finished"]
    assert source.finished and source.clock.time() == 3.0
    board = Board(Settings())
    alerts = [alert for update in updates for alert in board.apply(update).alerts]
    assert [alert.kind for alert in alerts] == ["oom"]
    assert "ended" in source.status()


async def test_an_old_recordings_reading_line_still_reads(tmp_path: Path) -> None:
    """Lines written before the reading had `per_model` (and without url or window_s)."""
    path = tmp_path / "old.jsonl"
    path.write_text('{"kind":"reading","name":"a","time":1.0,"up":true,"figures":{}}\n', encoding="utf-8")
    updates = [update async for update in ReplaySource(path, speed=0).updates()]
    assert isinstance(updates[0], ReadingArrived) and updates[0].reading.window_s is None


async def _first(source: LiveSource, wanted: type[Update], test: object = None) -> Update:
    async for update in source.updates():
        if isinstance(update, wanted) and (test is None or test(update)):  # type: ignore[operator]
            return update
    raise AssertionError("the source ended")


async def test_live_flushes_a_traceback_that_ends_the_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("", encoding="utf-8")
    endpoint = EndpointSettings(name="e", url="http://127.0.0.1:9", backend="vllm", log_file=log)
    source = LiveSource(
        Settings(poll_interval_s=60, endpoints=[endpoint]), log_poll_interval_s=0.05, log_quiet_s=0.3
    )
    lines = [
        "ERROR 08-20 14:05:01 [core.py:710] Traceback (most recent call last):",
        'ERROR 08-20 14:05:01 [core.py:710]   File "/opt/vllm/v1/engine/core.py", line 701, in run',
        "ERROR 08-20 14:05:01 [core.py:710] ValueError: token id out of range",
    ]

    async def write_later() -> None:
        await asyncio.sleep(0.3)
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")

    writer = asyncio.create_task(write_later())
    try:
        update = await asyncio.wait_for(
            _first(source, LogLineArrived, lambda u: u.line is None),
            timeout=20,  # type: ignore[attr-defined]
        )
    finally:
        await writer
        await source.close()
    assert isinstance(update, LogLineArrived)
    assert [event.category for event in update.events] == ["traceback"]  # type: ignore[attr-defined]
    board = Board(Settings(endpoints=[endpoint]))
    assert [alert.kind for alert in board.apply(update).alerts] == ["log_error"]
    assert board.log_entries("e") == []  # the flush adds no line: the traceback's lines were shown already


def test_endpoints_named_adds_only_new_ones() -> None:
    board = Board(Settings())
    named = EndpointsNamed([RecordedEndpoint(name="a"), RecordedEndpoint(name="a")])
    assert board.apply(named).changed == ("a",)
    assert board.apply(Finished()).changed == ("a",)


async def test_fleet_updates_end_when_cancelled_as_a_resume_wakes_them() -> None:
    swallowed = []
    for turns in TURNS:
        settings = fleet_settings("http://prometheus.test:9090", poll_interval_s=3600.0)
        assert settings.prometheus is not None
        source = FleetSource(
            settings, poller=ScriptedPoller(settings.prometheus, scripted_readings(2)), load_history=False
        )

        async def consume(source: FleetSource = source) -> None:
            async for _ in source.updates():
                pass

        task = asyncio.create_task(consume())
        await loop_turns(10)  # the first refresh's updates, then the hour's wait
        source.toggle_pause()  # pausing wakes the wait (the next round skips the refresh)
        await loop_turns(turns)
        if not await cancel_ends(task):
            swallowed.append(turns)
        await source.close()
    assert swallowed == [], f"cancelled {swallowed} loop turns after the wake-up: kept polling"
