"""Snapshots of the dashboard from a deterministic recording (no clocks, no randomness)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot
from ui_waiting import wait_for

from tui.app import SpectopApp


async def _settled(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, SpectopApp)
    await wait_for(pilot, lambda: app.replay_done)
    await pilot.pause()
    app.clear_notifications()
    await pilot.pause()


def test_dashboard_80x24(snap_compare: Any, replay_app: Callable[..., SpectopApp]) -> None:
    assert snap_compare(replay_app(), terminal_size=(80, 24), run_before=_settled)


def test_dashboard_160x48(snap_compare: Any, replay_app: Callable[..., SpectopApp]) -> None:
    assert snap_compare(replay_app(), terminal_size=(160, 48), run_before=_settled)


def test_detail_80x24(snap_compare: Any, replay_app: Callable[..., SpectopApp]) -> None:
    async def open_detail(pilot: Pilot[Any]) -> None:
        await _settled(pilot)
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(replay_app(), terminal_size=(80, 24), run_before=open_detail)
