"""A fleet refresh reduces each Prometheus answer as it arrives, so its parsed samples are never all alive at
once and set off no garbage collection (counted by the collector itself)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.fleet.fake_fleet import Fleet40, instances
from tests.fleet.fake_prometheus import FakePrometheus, settings
from tui.fleet.poller import FleetPoller

THRESHOLD = 20_000  # young objects: about those of one refresh's parsed samples here (10 answers of 1,000)
REFRESHES = 6


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """Young collections counted while the test runs, with the heap frozen and THRESHOLD set."""
    counted = [0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0:
            counted[0] += 1

    thresholds = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(THRESHOLD, *thresholds[1:])
    gc.callbacks.append(count)
    try:
        yield counted
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        gc.unfreeze()


async def test_refreshes_of_1000_instances_set_off_few_collections(collections: list[int]) -> None:
    fleet = Fleet40(instances(1000))
    async with (
        FakePrometheus(fleet.answer) as prometheus,
        FleetPoller(settings(prometheus.url), 30.0) as poller,
    ):
        first = await poller.refresh()
        assert len(first.readings) == 1000 and first.error is None
        collections[0] = 0
        for _ in range(REFRESHES):
            refresh = await poller.refresh()
            assert sum(reading.up for reading in refresh.readings) == 999
    # Answers kept until the refresh ends: two collections per refresh. Reduced as they come: the
    # readings' own objects (made while the last refresh's are still alive) now and then.
    assert collections[0] <= REFRESHES // 3
