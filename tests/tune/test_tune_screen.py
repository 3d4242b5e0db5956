"""The tune screen in a tiny app, against a real simulator: run, cancel (restores), run, apply best."""

from __future__ import annotations

import asyncio
import difflib

import httpx
from textual.app import App
from textual.widgets import DataTable, Input, Static

from tests.tune.conftest import TuneSim, write_config
from tui.screens.tune import TuneScreen
from tui.settings import EndpointSettings
from tui.tune.result import TuneResult


class TuneTestApp(App[None]):
    def __init__(self, endpoint: EndpointSettings) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.finished: list[TuneResult] = []

    def on_mount(self) -> None:
        self.push_screen(TuneScreen(self.endpoint, on_finished=self.finished.append, max_tokens=24))


async def _until(pilot, condition, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out; progress: {_text(pilot.app.screen, '#progress')}")
        await pilot.pause(0.05)


def _text(screen, selector: str) -> str:  # type: ignore[no-untyped-def]
    return str(screen.query_one(selector, Static).render())


async def _set(screen: TuneScreen, pilot, field_id: str, value: str) -> None:  # type: ignore[no-untyped-def]
    screen.query_one(f"#{field_id}", Input).focus()
    await pilot.press("ctrl+a", "ctrl+k", *value)


def _endpoint(tune_sim: TuneSim) -> EndpointSettings:
    return EndpointSettings(
        name="tuned",
        url=tune_sim.url,
        config_file=tune_sim.config,
        log_file=tune_sim.sim.log_file,
        restart_command=tune_sim.restart_command,
    )


async def test_run_cancel_run_apply_from_the_keyboard(tune_sim: TuneSim) -> None:
    write_config(tune_sim.config, k=1)  # k=2 beats the file's k=1 at concurrency 1
    original = tune_sim.config.read_bytes()
    endpoint = _endpoint(tune_sim)
    app = TuneTestApp(endpoint)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        await _set(screen, pilot, "values", "0,2")
        await _set(screen, pilot, "loads", "1")
        await _set(screen, pilot, "requests", "40")
        await pilot.press("ctrl+r")
        await _until(
            pilot, lambda: "burst" in _text(screen, "#progress") or "%" in _text(screen, "#progress")
        )
        await pilot.press("escape")  # cancel: restores and restarts
        await _until(pilot, lambda: not screen.running)
        assert "cancelled" in _text(screen, "#progress")
        assert tune_sim.config.read_bytes() == original
        assert app.finished[-1].cancelled
        await _set(screen, pilot, "requests", "8")
        await pilot.press("ctrl+r")
        await pilot.pause(0.2)
        await _until(pilot, lambda: not screen.running)
        result = app.finished[-1]
        assert not result.cancelled and result.best == {1: 2}
        assert tune_sim.config.read_bytes() == original
        table = screen.query_one("#tune-table", DataTable)
        assert table.row_count == 2
        labels = [str(column.label) for column in table.columns.values()]
        assert labels[1:4] == ["c=1 tok/s", "×base", "95% CI"]
        k2 = [str(cell) for cell in table.get_row_at(1)]
        low, high = (float(part) for part in k2[3].split("-"))
        assert low <= result.cell(2, 1).speedup <= high  # type: ignore[union-attr]
        assert "best c=1: k=2" in _text(screen, "#verdict")
        await pilot.press("a")
        diff = _text(screen, "#diff")
        assert "+num_speculative_tokens = 2" in diff and "-num_speculative_tokens = 1" in diff
        await pilot.press("y")
        await pilot.pause(0.2)
        await _until(pilot, lambda: not screen.applying)
        assert "applied k=2: the server is back" in _text(screen, "#progress")
    after = tune_sim.config.read_text(encoding="utf-8")
    changed = [
        line
        for line in difflib.unified_diff(original.decode().splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(changed) == 2  # one line out, one line in
    assert httpx.get(tune_sim.url + "/health", timeout=5).status_code == 200


async def test_the_sweeps_restarts_are_planned_restarts_not_an_endpoint_down(tune_sim: TuneSim) -> None:
    """The dashboard keeps polling during a tune: its restarts read "restarting", never "endpoint down"."""
    from tui.app import SpectopApp
    from tui.settings import Settings

    write_config(tune_sim.config, k=1)
    endpoint = _endpoint(tune_sim)
    app = SpectopApp(Settings(poll_interval_s=0.25, endpoints=[endpoint]), remember_theme_choice=False)
    seen_restarting: list[bool] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: "tuned" in app.readings and app.readings["tuned"].up)
        await pilot.press("T")
        await _until(pilot, lambda: isinstance(app.screen, TuneScreen))
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        await _set(screen, pilot, "values", "0,2")
        await _set(screen, pilot, "loads", "1")
        await _set(screen, pilot, "requests", "8")
        await pilot.press("ctrl+r")
        await pilot.pause(0.2)

        def finished() -> bool:
            seen_restarting.append(app.alerts.restarting("tuned"))
            return not screen.running

        await _until(pilot, finished)
        await _until(pilot, lambda: not app.alerts.restarting("tuned"))
    assert any(seen_restarting)
    assert [alert.kind for alert in app.alerts.all_alerts() if alert.kind == "down"] == []
