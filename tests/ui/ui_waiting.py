"""Waiting in Pilot tests by condition (counted in small pauses, never a wall-clock assert)."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot


async def wait_for(pilot: Pilot[object], condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    """Let the app run until `condition` holds (counted in small pauses, not wall-clock asserts)."""
    steps = int(timeout_s / 0.05)
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")
