"""An endpoint's first reading is drawn at once; later ones wait for the dashboard's batching.

The batching (`BATCH_DELAY_S`) gathers the readings of one poll tick into one redraw. For the first
reading it would only delay the first frame with figures (the start-up's budget is 0.5 s), so it is
skipped there. The delay is made an hour long here: a first reading that waited for it would never show.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from scripted_source import ScriptedSourceBase
from ui_waiting import wait_for

import tui.screens.dashboard as dashboard
from tui.settings import EndpointSettings, Settings
from tui.sources.clock import WallClock
from tui.sources.updates import ReadingArrived, Update
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.ui.app import SpectopApp
from tui.widgets.endpoint_card import EndpointCard

URL = "http://127.0.0.1:8000"


class TwoReadings(ScriptedSourceBase):
    """A first reading when `first` is set (the dashboard is up), the second when `go` is (no HTTP)."""

    def __init__(self) -> None:
        self.first = asyncio.Event()
        self.go = asyncio.Event()
        self.now = 100.0
        self.clock = WallClock(lambda: self.now)
        self.sent = 0

    async def updates(self) -> AsyncIterator[Update]:
        await self.first.wait()
        for running in (3.0, 7.0):
            if self.sent:
                await self.go.wait()
                self.now += 2.0
            figures = Figures(running=running, acceptance_rate=0.6)
            yield ReadingArrived(
                EndpointReading(name="a", url=URL, time=self.now, up=True, model="m", figures=figures)
            )
            self.sent += 1
        await asyncio.Event().wait()


async def test_the_first_reading_skips_the_batching_and_the_next_one_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dashboard, "BATCH_DELAY_S", 3600.0)
    source = TwoReadings()
    settings = Settings(endpoints=[EndpointSettings(name="a", url=URL)])
    app = SpectopApp(settings, source=source, clock=source.clock.time, remember_theme_choice=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query(EndpointCard)))
        card = app.screen.query(EndpointCard).first()
        await pilot.pause()
        source.first.set()
        await wait_for(pilot, lambda: card.data.reading is not None)
        assert card.data.figures.running == 3.0
        source.go.set()
        await wait_for(pilot, lambda: source.sent == 2 and app.readings["a"].figures.running == 7.0)
        await pilot.pause()
        assert card.data.figures.running == 3.0  # batched: drawn after BATCH_DELAY_S
