"""Cancelling `FleetSource.updates()` always ends it, also when the cancel lands as a resume wakes it."""

from __future__ import annotations

import asyncio

from tests.fleet.fake_fleet import ScriptedPoller, fleet_settings, scripted_readings
from tests.telemetry.cancel_turns import TURNS, cancel_ends, loop_turns
from tui.sources.fleet import FleetSource


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
