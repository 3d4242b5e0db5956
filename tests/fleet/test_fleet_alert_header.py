"""The header's alert count after a fleet refresh that changes many alerts at once: counted once those
updates are in, not once per alert, and without copying every alert."""

from __future__ import annotations

from tests.fleet.fake_fleet import NOW, scripted_app
from tests.ui.ui_waiting import wait_for
from tui.sources.updates import ImbalanceSeen
from tui.telemetry.alerts import AlertEngine

INSTANCES = 60


def test_active_count_is_the_number_of_active_alerts() -> None:
    engine = AlertEngine()
    assert engine.active_count() == 0
    for index in range(5):
        engine.observe_condition(f"r{index}", "imbalance", NOW, f"acceptance {index}% vs median 70%")
    assert engine.active_count() == len(engine.active()) == 5
    engine.observe_condition("r0", "imbalance", NOW + 1, None)
    assert engine.active_count() == len(engine.active()) == 4


async def test_a_refresh_that_changes_many_alerts_redraws_the_header_once() -> None:
    app = scripted_app(INSTANCES)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.readings) == INSTANCES)
        await pilot.pause()
        names = sorted(app.readings)
        before = app.alerts.active_count()
        redrawn: list[str] = []
        update_subtitle = app._update_subtitle

        def counted() -> None:
            update_subtitle()
            redrawn.append(app.sub_title)

        app._update_subtitle = counted  # type: ignore[method-assign]
        for step, message in enumerate(("tok/s 100 vs median 900", None)):  # raised, then cleared
            for name in names:
                app.apply(ImbalanceSeen(name, NOW + step, message))
            await wait_for(pilot, lambda step=step: len(redrawn) >= step + 1)
            await pilot.pause()
            assert len(redrawn) == step + 1  # once for the whole run of updates
            if message is not None:
                assert app.alerts.active_count() >= INSTANCES > before
                assert f"{app.alerts.active_count()} alerts (a)" in redrawn[-1]
        assert app.alerts.active_count() < before  # the scripted fleet's own imbalance cleared too
        assert ("alert" in redrawn[-1]) == (app.alerts.active_count() > 0)
