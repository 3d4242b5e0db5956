"""The alerts list's guard rows say what the guard offered: the k it offered and the file's k before, and
"switch speculation off" only for an offer to switch it off."""

from __future__ import annotations

from pathlib import Path

import httpx
from textual.app import App
from textual.widgets import DataTable

from tests.advice.test_guard_control import FakePorts, _board, _reading
from tests.ui.ui_waiting import wait_for
from tui.advice.guard import GuardRecord
from tui.advice.guard_control import GuardController
from tui.screens.alerts import AlertsScreen
from tui.telemetry.alerts import AlertEngine


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
