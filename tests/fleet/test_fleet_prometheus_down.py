"""Prometheus itself going away (a real one, stopped mid-test): ONE alert, not one "down" per instance; the
instances' figures are unknown with that reason and their status "no data"."""

from __future__ import annotations

from tests.fleet.conftest import NEEDS_PROMETHEUS, Fleet, stop
from tests.fleet.fake_fleet import fleet_app
from tests.ui.ui_waiting import wait_for
from tui.settings import PrometheusSettings, Settings
from tui.sources.fleet import SOURCE_NAME
from tui.telemetry.figures import Figures
from tui.widgets.fleet_table import FleetTable

pytestmark = NEEDS_PROMETHEUS


async def test_prometheus_down_is_one_alert_and_unknown_figures(
    own_fleet: Fleet,
) -> None:
    url = own_fleet.prometheus.url
    settings = Settings(
        prometheus=PrometheusSettings(url=url, timeout_s=2.0), window_s=4.0, poll_interval_s=0.5
    )
    a, b, c = (own_fleet.instance(name) for name in ("a", "b", "c"))
    stop(own_fleet.sims["c"][0])  # Prometheus answers, c's `up` becomes 0: c is down
    app = fleet_app(settings)
    async with app.run_test(size=(120, 40)) as pilot:

        def c_down_others_up() -> bool:
            readings = app.readings
            return (
                all(name in readings for name in (a, b, c))
                and not readings[c].up
                and readings[a].up
                and readings[b].up
            )

        await wait_for(pilot, c_down_others_up, timeout_s=30.0)
        active = app.alerts.active()
        assert [(alert.endpoint, alert.kind) for alert in active] == [(c, "down")]
        assert "target down" in (app.readings[c].error or "")

        own_fleet.prometheus.stop()  # Prometheus itself goes away
        await wait_for(pilot, lambda: (app.readings[a].error or "").startswith("Prometheus"), timeout_s=30.0)
        await pilot.pause()
        active = app.alerts.active()
        kinds = sorted((alert.endpoint, alert.kind) for alert in active)
        assert kinds == sorted([(c, "down"), (SOURCE_NAME, "source_down")])  # not one per instance
        source_alert = next(alert for alert in active if alert.kind == "source_down")
        assert source_alert.severity == "critical"
        assert source_alert.message.startswith(f"Prometheus at {url} unreachable: ")
        assert "2 alerts (a)" in app.sub_title

        context = app.context
        for name in (a, b):
            reading = app.readings[name]
            assert reading.error is not None and reading.error.startswith("Prometheus unreachable")
            assert reading.figures == Figures()  # every figure unknown ("–"), none 0
            assert context.card_data(name).status == "no data"  # not "down": nothing is known
        table = app.screen.query_one(FleetTable)
        table.refresh_rows()
        rows = {row.name: row for row in table.rows_shown}
        for name in (a, b):
            assert rows[name].status == "no data" and rows[name].worst_alert is None
            assert rows[name].tokens_per_s is None and rows[name].acceptance_rate is None
