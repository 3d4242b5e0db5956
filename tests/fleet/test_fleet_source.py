"""`FleetSource` (core, no Textual): the updates it yields and what they do to the board."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from tests.fleet.fake_fleet import Fleet40, fleet_settings
from tests.fleet.fake_prometheus import WINDOW_S, A, B, FakePrometheus, healthy, refresh_with
from tui.board import Board
from tui.fleet.poller import FleetPoller, FleetRefresh
from tui.settings import Settings
from tui.sources.fleet import FleetSource
from tui.sources.updates import ImbalanceSeen, Notice, ReadingsArrived, SeriesLoaded, Update
from tui.telemetry.figures import Figures

OUTLIER = "10.1.0.7:8000"
GONE = "10.9.9.9:8000"


def with_history(fleet: Fleet40) -> Any:
    """The fake, answering query_range with three points of tok/s for instance 1 and for an instance
    gone since (in the history, not in the refresh)."""

    def answer(path: str, form: dict[str, str]) -> Any:
        if path == "/api/v1/query_range" and "generation_tokens" in form.get("query", ""):
            start = float(form["start"])
            values = [[start + step, str(50.0 + step)] for step in range(3)]
            result = [{"metric": {"instance": name}, "values": values} for name in ("10.1.0.1:8000", GONE)]
            return 200, {"status": "success", "data": {"resultType": "matrix", "result": result}}, 0.0
        return fleet.answer(path, form)

    return answer


async def take(updates: AsyncIterator[Update], count: int) -> list[Update]:
    return [await anext(updates) for _ in range(count)]


async def test_history_first_then_a_reading_per_instance_into_the_board() -> None:
    fleet = Fleet40()
    async with FakePrometheus(with_history(fleet)) as fake:
        settings = fleet_settings(fake.url)
        source = FleetSource(settings)
        board = Board(settings)
        assert not source.allows_bench and not source.allows_editing
        updates = source.updates()
        first = await anext(updates)
        assert isinstance(first, SeriesLoaded)
        assert list(first.points) == ["10.1.0.1:8000"]  # not the instance Prometheus no longer lists
        board.apply(first)
        assert board.series.endpoint("10.1.0.1:8000").values("generation_tokens_per_s") == [50.0, 51.0, 52.0]
        refresh = await anext(updates)  # one update for the whole refresh
        assert isinstance(refresh, ReadingsArrived) and len(refresh.readings) == 40
        assert len(board.apply(refresh).changed) == 40
        assert [endpoint.name for endpoint in board.endpoints][:1] == ["10.1.0.1:8000"]
        assert len(board.endpoints) == 40  # endpoints first seen join the board
        await updates.aclose()
        await source.close()


async def test_imbalance_goes_through_the_alert_engine_and_clears(
    fleet40: Fleet40, fleet40_prometheus: FakePrometheus
) -> None:
    settings = fleet_settings(fleet40_prometheus.url)
    source = FleetSource(settings, load_history=False)
    board = Board(settings)
    updates = source.updates()
    seen = [update for update in await take(updates, 2) if isinstance(update, ImbalanceSeen)]
    assert [update.endpoint for update in seen] == [OUTLIER]
    applied = board.apply(seen[0])
    assert [(alert.endpoint, alert.kind, alert.active) for alert in applied.alerts] == [
        (OUTLIER, "imbalance", True)
    ]
    assert "acceptance 20% vs median" in applied.alerts[0].message
    fleet40.by_name()[OUTLIER].figures["acceptance_rate"] = 0.62  # back in line
    cleared: list[ImbalanceSeen] = []
    while not cleared:
        update = await anext(updates)
        if isinstance(update, ImbalanceSeen):
            cleared.append(update)
    assert cleared[0].message is None
    assert [(alert.kind, alert.active) for alert in board.apply(cleared[0]).alerts] == [("imbalance", False)]
    assert not board.alerts.active(OUTLIER) or all(a.kind != "imbalance" for a in board.alerts.active())
    await updates.aclose()
    await source.close()


async def test_prometheus_down_is_said_once_and_its_return_too(
    fleet40: Fleet40, fleet40_prometheus: FakePrometheus
) -> None:
    source = FleetSource(fleet_settings(fleet40_prometheus.url, poll_interval_s=0.05), load_history=False)
    updates = source.updates()
    await take(updates, 2)  # the first refresh's readings and its imbalance
    fleet40.failing = (503, b"overloaded", 0.0)
    notices: list[Notice] = []
    readings = 0
    while readings < 120:  # three refreshes while down
        update = await anext(updates)
        if isinstance(update, Notice) and update.title.startswith("Prometheus"):
            notices.append(update)
        elif isinstance(update, ReadingsArrived):
            readings += len(update.readings)
            assert not any(reading.up for reading in update.readings)
            assert all(reading.figures.generation_tokens_per_s is None for reading in update.readings)
    assert [notice.title for notice in notices] == ["Prometheus DOWN"]
    assert "HTTP 503" in notices[0].message
    assert source.status()[0].startswith("Prometheus DOWN")
    fleet40.failing = None
    while not (isinstance(update := await anext(updates), Notice) and update.title == "Prometheus"):
        pass
    assert update.message == "Prometheus answers again"
    assert not any("DOWN" in part for part in source.status())
    await updates.aclose()
    await source.close()


class CountingPoller(FleetPoller):
    """A poller whose refresh takes longer than the poll interval; it counts refreshes in flight."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = 0
        self.most_in_flight = 0
        self.refreshes = 0

    async def refresh(self) -> FleetRefresh:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.05)
            return await super().refresh()
        finally:
            self.in_flight -= 1
            self.refreshes += 1


async def test_one_refresh_in_flight_at_a_time(fleet40: Fleet40, fleet40_prometheus: FakePrometheus) -> None:
    settings = fleet_settings(fleet40_prometheus.url, poll_interval_s=0.001)
    assert settings.prometheus is not None
    poller = CountingPoller(settings.prometheus, WINDOW_S)
    source = FleetSource(settings, poller=poller, load_history=False)
    updates = source.updates()
    await take(updates, 6)
    assert poller.refreshes >= 4 and poller.most_in_flight == 1
    source.toggle_pause()
    assert source.paused
    await updates.aclose()
    await source.close()


# --- fleet readings go into the dashboard's Board unchanged: history, gaps and alerts -----------------------


async def test_fleet_readings_feed_the_board_history_and_alerts() -> None:
    refresh = await refresh_with(healthy(up=(True, False)))
    board = Board(Settings())
    board.apply(SeriesLoaded({A: [(refresh.time - 4, Figures(generation_tokens_per_s=100.0))]}))
    changes = [alert for reading in refresh.readings for alert in board.add_reading(reading)]
    assert [endpoint.name for endpoint in board.endpoints] == [A, B]
    assert board.readings[A].figures.generation_tokens_per_s == 120.5
    assert board.series.endpoint(A).values("generation_tokens_per_s") == [100.0, 120.5]
    assert board.series.endpoint(B).values("generation_tokens_per_s") == [None]  # down: a gap, not 0
    assert [(alert.endpoint, alert.kind) for alert in changes] == [(B, "down")]
