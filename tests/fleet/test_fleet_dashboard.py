"""The fleet dashboard (`spectop --prometheus URL`) on 40 instances behind a fake Prometheus; what the table
must say is computed from the fake's own figures (`Fleet40`), never from the table."""

from __future__ import annotations

import gc
import math
import statistics
from typing import Any

import pytest
from textual.message import Message
from textual.screen import Screen

from tests.fleet.fake_fleet import NOW, Fleet40, filled, scripted_app, scripted_readings
from tests.fleet.fake_prometheus import FakePrometheus, Member
from tests.ui.ui_waiting import wait_for
from tui.fleet.table_rows import FleetRow
from tui.format import UNKNOWN
from tui.screens.detail import DetailScreen
from tui.sources.fleet import SOURCE_NAME
from tui.sources.updates import ImbalanceSeen
from tui.telemetry.figures import Figures
from tui.ui.app import FLEET_GC_THRESHOLD, SpectopApp
from tui.widgets.fleet_table import FleetTable
from tui.widgets.log_pane import LogPane
from tui.widgets.messages import EndpointsUpdated, EndpointUpdated


def members(table: FleetTable, group: str) -> list[FleetRow]:
    return [row for row in table.rows_shown if not row.summary and row.group == group]


def expected_order(fleet: Fleet40, group: str, figure: str, *, reverse: bool = False) -> list[str]:
    """The instances of `group` by `figure`, ties by number (10.1.0.2 before 10.1.0.10); unknown (NaN,
    down) last."""
    members = [m for m in fleet.members if m.model == group]  # by number

    def known(member: Member) -> bool:
        return member.up and not math.isnan(member.figures[figure])

    ordered = sorted((m for m in members if known(m)), key=lambda m: m.figures[figure], reverse=reverse)
    return [m.name for m in ordered + [m for m in members if not known(m)]]


async def test_forty_instances_open_as_a_sorted_grouped_filtered_table_down_and_nan_unknown(
    fleet40: Fleet40, fleet40_app: SpectopApp
) -> None:
    fleet, app = fleet40, fleet40_app
    async with app.run_test(size=(80, 24)) as pilot:
        table = await filled(pilot)
        assert app.screen.has_class("table-view")  # 40 cards do not fit in 80x24
        rows = {row.name: row for row in table.rows_shown}
        assert rows["10.1.0.40:8000"].status == "down" and rows["10.1.0.40:8000"].tokens_per_s is None
        assert rows["10.1.0.39:8000"].status == "up" and rows["10.1.0.39:8000"].acceptance_rate is None
        assert [cell.plain.strip() for cell in table.get_row("10.1.0.39:8000")][4] == UNKNOWN  # not 0
        assert isinstance(app.focused, FleetTable)
        groups = [row.name for row in table.rows_shown if row.summary]
        assert groups == ["llama-8b", "qwen-7b"]

        # tok/s ascending, again: the other way round; acceptance: NaN (#39) and the down target (#40) last
        for key, figure, reverse in (
            ("T", "generation_tokens_per_s", False),
            ("T", "generation_tokens_per_s", True),
            ("A", "acceptance_rate", False),
        ):
            await pilot.press(key)
            for group in groups:
                got = [row.name for row in members(table, group)]
                assert got == expected_order(fleet, group, figure, reverse=reverse)
        await pilot.press(">")  # the next column: mean length
        assert table.sort_column == "mean_length"
        assert table.columns["mean_length"].label.plain.strip().startswith("▲")  # type: ignore[index]
        # the filter, and enter opens the detail screen
        await pilot.press("slash", *"qwen")
        await pilot.pause()
        assert {row.group for row in table.rows_shown} == {"qwen-7b"}
        assert len(table.endpoints) == len([m for m in fleet.members if m.model == "qwen-7b"])
        await pilot.press("enter")  # keep the filter, back to the table
        await pilot.press("escape")  # clears it
        await pilot.pause()
        assert len(table.endpoints) == 40
        await pilot.press("slash", *"10.1.0.1")
        await pilot.press("enter")
        await pilot.pause()
        want = sorted(m.name for m in fleet.members if "10.1.0.1" in m.name)
        assert sorted(table.endpoints) == want
        assert isinstance(app.focused, FleetTable)
        await pilot.press("down")  # from the group's summary row to its first instance
        selected = table.selected_endpoint
        assert selected in want
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.endpoint == selected
        title = str(app.screen.query_one(LogPane).border_title)
        assert "fleet mode" in title and "metrics only" in title  # no log: Prometheus has none
        assert "recording" not in title


async def test_group_summary_rows_and_the_imbalance_marker(fleet40: Fleet40, fleet40_app: SpectopApp) -> None:
    fleet, app = fleet40, fleet40_app
    async with app.run_test(size=(200, 50)) as pilot:
        table = await filled(pilot)
        await wait_for(pilot, lambda: bool(app.alerts.active()))
        summary = {row.group: row for row in table.rows_shown if row.summary}
        for group in ("llama-8b", "qwen-7b"):
            up = [m for m in fleet.members if m.model == group and m.up]
            row = summary[group]
            assert row.status == f"{len(up)}/{len([m for m in fleet.members if m.model == group])} up"
            want_tokens = sum(m.figures["generation_tokens_per_s"] for m in up)
            assert row.tokens_per_s == pytest.approx(want_tokens)
            known = [m.figures["acceptance_rate"] for m in up if not math.isnan(m.figures["acceptance_rate"])]
            assert row.acceptance_rate == pytest.approx(statistics.median(known))
        # Instance 7 is far off the llama group's acceptance: marked on its row and its group's.
        outlier = next(row for row in table.rows_shown if row.name == "10.1.0.7:8000")
        assert outlier.off.startswith("acc-")
        assert summary["llama-8b"].off == "1 off" and summary["qwen-7b"].off == "even"
        cells = [cell.plain for cell in table.get_row(summary["llama-8b"].key)]
        assert "1 off" in " ".join(cells)
        # ... and alerted on through the alert engine.
        kinds = {(alert.endpoint, alert.kind) for alert in app.alerts.active()}
        assert ("10.1.0.7:8000", "imbalance") in kinds
        await wait_for(pilot, lambda: table.wide)  # 200 columns: the model and trend columns too


@pytest.mark.parametrize(
    "failure",
    [
        (503, b"overloaded", 0.0),
        (422, {"status": "error", "errorType": "execution", "error": "query timed out"}, 0.0),
        (200, {"status": "success", "data": {"resultType": "vector", "result": []}}, 5.0),  # slow
        None,  # down: the server is gone
    ],
    ids=["http-503", "status-error", "slow", "down"],
)
async def test_prometheus_failing_shows_as_such_never_as_zero(
    failure: Any, fleet40: Fleet40, fleet40_app: SpectopApp, fleet40_prometheus: FakePrometheus
) -> None:
    fleet, app = fleet40, fleet40_app
    async with app.run_test(size=(80, 24)) as pilot:
        table = await filled(pilot)
        if failure is None:
            await fleet40_prometheus.close()
        else:
            fleet.failing = failure
        await wait_for(pilot, lambda: all(row.status == "no data" for row in members(table, "qwen-7b")))
        assert "Prometheus DOWN" in app.sub_title
        kinds = [(alert.endpoint, alert.kind) for alert in app.alerts.active()]
        assert kinds.count((SOURCE_NAME, "source_down")) == 1  # one alert for Prometheus
        assert [kind for kind in kinds if kind[1] == "down"] == [("10.1.0.40:8000", "down")]  # up == 0
        source_down = next(alert for alert in app.alerts.active() if alert.kind == "source_down")
        assert source_down.severity == "critical"
        qwen = [row for row in members(table, "qwen-7b") if row.name != "10.1.0.40:8000"]
        assert all(row.worst_alert is None for row in qwen)  # not one alert per instance
        for row in qwen:
            assert app.readings[row.name].figures == Figures()  # every figure unknown, none 0
            assert app.card_data(row.name).status == "no data"  # not "down": nothing is known
        if failure is None:
            url = fleet40_prometheus.url
            assert source_down.message.startswith(f"Prometheus at {url} unreachable: ")
            assert all(
                (app.readings[row.name].error or "").startswith("Prometheus unreachable") for row in qwen
            )
        # Only the rows on the screen are drawn: those below are drawn as they scroll in.
        for scrolled in (False, True):
            if scrolled:
                table.move_cursor(row=table.row_count - 1, animate=False)
                await pilot.pause()
            for key in table.visible_keys():
                cells = [cell.plain.strip() for cell in table.get_row(key)]
                figures = cells[2:8]  # tok/s .. KV
                assert all(cell in (UNKNOWN, f"{UNKNOWN}/{UNKNOWN}") for cell in figures), cells
        assert table.rows_shown[-1].key in table.visible_keys()
        fleet.failing = None
        if failure is not None:  # back: figures again, and the subtitle says so
            await wait_for(pilot, lambda: any(row.status == "up" for row in members(table, "qwen-7b")))
            assert "Prometheus DOWN" not in app.sub_title
            await wait_for(pilot, lambda: all(a.kind != "source_down" for a in app.alerts.active()))


# --- the heap frozen (gc.freeze) once the first refresh is drawn, unfrozen on exit --------------------------


async def test_the_heap_is_frozen_after_the_first_refresh_and_unfrozen_on_exit() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    app = scripted_app(50)
    async with app.run_test(size=(200, 50)) as pilot:
        await filled(pilot, 50)
        await wait_for(pilot, lambda: gc.get_freeze_count() > 0, "the heap frozen")
        assert gc.get_threshold() == (FLEET_GC_THRESHOLD, *before[1:])
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


# --- the header's alert count after a refresh that changes many alerts: counted once ------------------------


ALERTING_INSTANCES = 60


async def test_a_refresh_that_changes_many_alerts_redraws_the_header_once() -> None:
    app = scripted_app(ALERTING_INSTANCES)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.readings) == ALERTING_INSTANCES)
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
            assert app.alerts.active_count() == len(app.alerts.active())
            if message is not None:
                assert app.alerts.active_count() >= ALERTING_INSTANCES > before
                assert f"{app.alerts.active_count()} alerts (a)" in redrawn[-1]
        assert app.alerts.active_count() < before  # the scripted fleet's own imbalance cleared too
        assert ("alert" in redrawn[-1]) == (app.alerts.active_count() > 0)


# --- a refresh is one message to each screen (not one per instance), drawn at once --------------------------


REFRESHED_INSTANCES = 400


async def test_a_refresh_of_400_instances_is_one_message_to_each_screen_drawn_at_once() -> None:
    app = scripted_app(REFRESHED_INSTANCES)
    posted: list[Message] = []
    post = Screen.post_message

    def counting(self: Screen[Any], message: Message) -> bool:
        if isinstance(message, EndpointUpdated | EndpointsUpdated):
            posted.append(message)
        return post(self, message)

    Screen.post_message = counting  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            table = await filled(pilot, REFRESHED_INSTANCES)
            told = [
                name
                for message in posted
                if isinstance(message, EndpointsUpdated)
                for name in message.endpoints
            ]
            assert not [message for message in posted if isinstance(message, EndpointUpdated)]
            assert len(posted) == len(app.screen_stack) == 1  # the whole refresh at once
            assert all(isinstance(message, EndpointsUpdated) and message.immediate for message in posted)
            # every instance was told, once, in the order the source gave them
            assert len(told) == REFRESHED_INSTANCES and set(told) == set(table.endpoints)
            first_seen = list(dict.fromkeys(told))
            assert first_seen == [reading.name for reading in scripted_readings(REFRESHED_INSTANCES)]
    finally:
        Screen.post_message = post  # type: ignore[method-assign]
