"""Fleet mode moves the start-up heap out of the garbage collector's sight once the first refresh is
drawn (`gc.freeze`, young collections less often: tui/ui/app.py), and puts everything back on exit: an
app run in a test process leaves nothing frozen and the thresholds as they were."""

from __future__ import annotations

import gc

from tests.fleet.fake_fleet import scripted_app
from tests.ui.ui_waiting import wait_for
from tui.ui.app import FLEET_GC_THRESHOLD
from tui.widgets.fleet_table import FleetTable


async def test_the_heap_is_frozen_after_the_first_refresh_and_unfrozen_on_exit() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    app = scripted_app(50)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query(FleetTable)))
        table = app.screen.query_one(FleetTable)
        await wait_for(pilot, lambda: len(table.endpoints) == 50)
        await wait_for(pilot, lambda: gc.get_freeze_count() > 0, "the heap frozen")
        assert gc.get_threshold() == (FLEET_GC_THRESHOLD, *before[1:])
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
