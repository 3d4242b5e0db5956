"""The advisor on the dashboard: the card's and the detail's line, the alert, a k by batch size."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from textual.app import App
from textual.widgets import DataTable
from ui_waiting import press_into, spectop, wait_for

from tests.advice.test_advisor import CONDITIONAL, fitted, unconditional
from tests.advice.test_guard_control import PER_POSITION, FakePorts, _board, _model, _reading
from tui.advice.guard import GuardRecord
from tui.advice.guard_control import GuardController
from tui.advice.live import ConfigFacts, KeptModels
from tui.advice.stepcost import StepCostFile
from tui.board import Board
from tui.screens.alerts import AlertsScreen
from tui.screens.detail import DetailScreen
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.sources.base import Source, WallClock
from tui.sources.updates import ReadingArrived, Update
from tui.telemetry.alerts import AlertEngine
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.ui.app import SpectopApp
from tui.widgets.card_view import CardData, badge_line
from tui.widgets.figure_table import FigureTable, advice_lines

URL = "http://127.0.0.1:8000"


class ScriptedSourceBase(Source):
    """A source for scripted tests: one status line; the test gives `updates()`."""

    def status(self) -> list[str]:
        return ["scripted"]


class ScriptedSource(ScriptedSourceBase):
    """Readings at the times given, as a live source would deliver them (no HTTP)."""

    def __init__(self, times: list[float]) -> None:
        self.times = times
        self.now = times[0]
        self.clock = WallClock(lambda: self.now)

    async def updates(self) -> AsyncIterator[Update]:
        for time in self.times:
            self.now = time
            figures = Figures(
                per_position_acceptance=unconditional(CONDITIONAL[:4]), running=1.0, acceptance_rate=0.6
            )
            yield ReadingArrived(
                EndpointReading(name="a", url=URL, time=time, up=True, model="m", figures=figures)
            )
            await asyncio.sleep(0.01)
        self.finished = True


def _app(times: list[float], kept: KeptModels) -> SpectopApp:
    source = ScriptedSource(times)
    alerts = {"alerts": AlertSettings(sustained_s=10.0)}
    endpoint = EndpointSettings(name="a", url=URL)
    return spectop(endpoint, settings=alerts, source=source, step_costs=kept, clock=source.clock.time)


async def test_the_card_and_the_detail_say_which_k_would_be_faster_and_the_alert_follows() -> None:
    app = _app([100.0, 105.0, 112.0], KeptModels(StepCostFile(models=[fitted()])))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.source.finished and "a" in app.readings)
        await wait_for(pilot, lambda: any(alert.kind == "advice" for alert in app.alerts.active("a")))
        alert = next(alert for alert in app.alerts.active("a") if alert.kind == "advice")
        assert alert.message.startswith("k=2 would be 1.28x faster than k=4 for 12 s")
        data = app.card_data("a")
        assert data.advice is not None and data.advice.better_k == 2
        quiet = CardData(**{**data.__dict__, "alerts": []})
        assert badge_line(quiet, 76).plain == "k=4 now · k=2 would be 1.28x"
        await press_into(pilot, DetailScreen, "enter")
        figures = app.screen.query_one(FigureTable)
        table = figures.render().plain
        assert "advice k=4 now · k=2 would be 1.28x" in table  # 80x24: no room left for its basis
        assert "(tune" not in table
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: "(tune" in figures.render().plain, "the basis with room for it")
        table = figures.render().plain
        assert "advice k=4 now · k=2 would be 1.28x (tune 2026-12-01" in table.replace("\n  ", " ")


async def test_without_a_model_the_detail_offers_the_calibration() -> None:
    app = _app([100.0], KeptModels())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.source.finished and "a" in app.readings)
        data = app.card_data("a")
        assert data.advice is not None and data.advice.basis is None
        assert "k=4 now" not in badge_line(data, 116).plain  # the card says nothing without a model
        await press_into(pilot, DetailScreen, "enter")
        table = " ".join(app.screen.query_one(FigureTable).render().plain.split())
        assert "no step-cost model for this server: calibrate with spectop tune CONFIG" in table
        assert "(or in spectop: T, then c on the tune screen)" in table


async def _offered_and_declined(tmp_path: Path) -> AlertEngine:
    """The controller offers the advisor's k=2 for a file with k=4, and the user declines."""
    board, _ = _board(tmp_path)
    ports = FakePorts()
    now = {"t": 100.0}
    async with httpx.AsyncClient() as client:
        guard = GuardController(board, lambda: client, lambda: now["t"], ports)
        for time in (100.0, 105.0, 111.0):
            now["t"] = time
            board.add_reading(_reading(time))
            guard.watch(["e"])
            await ports.settle()
        [(_offer, answer)] = ports.offers
        now["t"] = 112.0
        answer(False)
        await ports.settle()
    return board.alerts


async def _guard_rows(alerts: AlertEngine) -> list[str]:
    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(AlertsScreen(alerts))
        table = app.screen.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count > 0)
        rows = [[str(cell) for cell in table.get_row_at(index)] for index in range(table.row_count)]
    return [" ".join(row[4].split()) for row in rows if row[0] == "GUARD"]


async def test_a_k_offer_row_says_the_k_offered_and_the_k_before(tmp_path: Path) -> None:
    declined, offered = await _guard_rows(await _offered_and_declined(tmp_path))  # newest first
    assert offered.startswith("guard offered k=2 (was 4): k=2 would be"), offered
    assert declined.startswith("guard offer of k=2 declined, k stays 4: "), declined
    assert "speculation" not in offered + declined


async def test_only_an_offer_to_switch_off_says_switch_speculation_off() -> None:
    alerts = AlertEngine()
    reason = "acceptance 30% below 50% for 31 s"
    for record in (
        GuardRecord("e", 1.0, "offered", reason, 0.3, 0.5),
        GuardRecord("e", 2.0, "k_changed", reason, 0.3, 0.5, detail="k=1; the server is back", k=1, was_k=2),
        GuardRecord("e", 3.0, "failed", reason, 0.3, 0.5, detail="the server did not come back", k=3),
    ):
        alerts.note(record.endpoint, record.time, record.line(), record.diff)
    failed, changed, off = await _guard_rows(alerts)
    assert off.startswith("guard offered to switch speculation off: acceptance 30%"), off
    assert changed.startswith("guard set k=1 (was 2): acceptance 30%"), changed
    assert failed.startswith("guard could not set k=3: "), failed


LINE = "k=3 now · k by batch size 1: k=1, 2-256: k=0 (significant)"


def _advice_after_one_reading(per_draft_seq_ms: float) -> CardData:
    endpoints = [EndpointSettings(name="e", url=URL)]
    board = Board(Settings(alerts=AlertSettings(sustained_s=10.0), endpoints=endpoints))
    board.enable_advice(KeptModels(StepCostFile(models=[_model(8.0, per_draft_seq_ms)])))
    board.set_config_facts("e", ConfigFacts(3, "s", "speculative.num_speculative_tokens"))
    figures = Figures(per_position_acceptance=PER_POSITION, running=1.0, acceptance_rate=0.57)
    reading = EndpointReading(name="e", url=URL, time=100.0, up=True, model="m", figures=figures)
    board.add_reading(reading)
    assert board.advice is not None
    return CardData(name="e", reading=reading, now=100.0, advice=board.advice.advice("e"))


def test_card_and_detail_show_the_table_offer_and_one_k_for_every_load_keeps_the_usual_line() -> None:
    data = _advice_after_one_reading(10.0)  # k=1 wins alone, off wins at load 8 (test_guard_control)
    assert data.advice is not None and data.advice.table == "1: k=1, 2-256: k=0"
    assert badge_line(data, 120).plain == LINE
    assert " ".join(advice_lines(data.advice, 200, 3)).startswith(f"advice {LINE}")
    data = _advice_after_one_reading(12.46)  # within the margin: no table, one k for every load
    assert data.advice is not None and data.advice.table is None
    assert "batch size" not in badge_line(data, 120).plain
