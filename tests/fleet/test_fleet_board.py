"""Fleet readings go into the dashboard's plain-data state (`tui.board.Board`) unchanged: the hook the
fleet dashboard will use (`for reading in (await poller.refresh()).readings: board.add_reading(reading)`)."""

from __future__ import annotations

from tests.fleet.fake_prometheus import A, B, healthy, refresh_with
from tui.board import Board
from tui.settings import Settings
from tui.sources.updates import SeriesLoaded
from tui.telemetry.figures import Figures


async def test_fleet_readings_feed_the_board_history_and_alerts() -> None:
    refresh = await refresh_with(healthy(up={A: "1", B: "0"}))
    board = Board(Settings())
    board.apply(SeriesLoaded({A: [(refresh.time - 4, Figures(generation_tokens_per_s=100.0))]}))
    changes = [alert for reading in refresh.readings for alert in board.add_reading(reading)]
    assert [endpoint.name for endpoint in board.endpoints] == [A, B]
    assert board.readings[A].figures.generation_tokens_per_s == 120.5
    assert board.series.endpoint(A).values("generation_tokens_per_s") == [100.0, 120.5]
    assert board.series.endpoint(B).values("generation_tokens_per_s") == [None]  # down: a gap, not 0
    assert [(alert.endpoint, alert.kind) for alert in changes] == [(B, "down")]
