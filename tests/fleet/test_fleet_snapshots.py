"""Snapshots of the fleet table from deterministic data (a scripted poller, a fixed clock)."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from tests.fleet.fake_fleet import filled, scripted_app


async def _settled(pilot: Pilot[Any]) -> None:
    await filled(pilot)
    await pilot.pause()
    pilot.app.clear_notifications()
    await pilot.pause()


def test_fleet_table_80x24(snap_compare: Any) -> None:
    assert snap_compare(scripted_app(), terminal_size=(80, 24), run_before=_settled)


def test_fleet_table_200x50_sorted_by_acceptance(snap_compare: Any) -> None:
    async def sorted_by_acceptance(pilot: Pilot[Any]) -> None:
        await _settled(pilot)
        await pilot.press("A")
        await pilot.pause()

    assert snap_compare(scripted_app(), terminal_size=(200, 50), run_before=sorted_by_acceptance)
