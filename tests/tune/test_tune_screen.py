"""The tune screen against a real simulator: run, cancel, run, apply; the advisor's calibration."""

from __future__ import annotations

import httpx
from textual.app import App
from textual.widgets import DataTable, Input, Static

from tests.tune.conftest import TuneSim, changed_lines, write_config
from tests.ui.ui_waiting import wait_for
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


async def _until(pilot, condition, timeout_s: float = 180.0) -> None:  # type: ignore[no-untyped-def]
    explain = lambda: f"progress: {_text(pilot.app.screen, '#progress')}"  # noqa: E731
    await wait_for(pilot, condition, "the tune screen", timeout_s=timeout_s, explain=explain)


def _text(screen, selector: str) -> str:  # type: ignore[no-untyped-def]
    return str(screen.query_one(selector, Static).render())


async def _set(screen: TuneScreen, pilot, field_id: str, value: str) -> None:  # type: ignore[no-untyped-def]
    screen.query_one(f"#{field_id}", Input).focus()
    await pilot.press("i", "ctrl+a", "ctrl+k", *value)  # i: into edit mode


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
        runs = len(app.finished)
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: len(app.finished) > runs and not screen.running)
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
        assert "best at concurrency 1: k=2" in _text(screen, "#verdict")
        await pilot.press("a")
        diff = _text(screen, "#diff")
        assert "+num_speculative_tokens = 2" in diff and "-num_speculative_tokens = 1" in diff
        await pilot.press("y")
        await _until(pilot, lambda: "applied k=2: the server is back" in _text(screen, "#progress"))
        await _until(pilot, lambda: not screen.applying)
    changed = changed_lines(original.decode(), tune_sim.config.read_text(encoding="utf-8"))
    assert len(changed) == 2  # one line out, one line in
    assert httpx.get(tune_sim.url + "/health", timeout=5).status_code == 200


async def test_c_calibrates_the_advisor_with_planned_restarts_and_the_dashboard_takes_the_model(
    tune_sim: TuneSim,
) -> None:
    """`T` then `c`: the file restored, the model kept and used at once; restarts never read as down."""
    from tui.advice.stepcost import find_model, load_models
    from tui.settings import Settings
    from tui.ui.app import SpectopApp

    original = tune_sim.config.read_bytes()  # k=2
    endpoint = _endpoint(tune_sim)
    app = SpectopApp(Settings(poll_interval_s=0.5, endpoints=[endpoint]), remember_theme_choice=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: "tuned" in app.readings and app.board.advice is not None)
        announced: list[str] = []  # each planned restart, however short (a poll could miss it)
        begin_restart = app.alerts.begin_restart

        def announce(name: str, time: float) -> None:
            announced.append(name)
            begin_restart(name, time)

        app.alerts.begin_restart = announce  # type: ignore[method-assign]
        await pilot.press("T")
        await _until(pilot, lambda: isinstance(app.screen, TuneScreen))
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        await _set(screen, pilot, "requests", "4")
        await pilot.press("enter")  # applied, out of the field's edit mode: c is the screen's key
        await pilot.press("c")
        # The first line is shown while the first burst runs; a loaded machine can step past it between
        # two looks, so its own end counts too.
        await _until(
            pilot,
            lambda: any(
                words in _text(screen, "#progress")
                for words in ("calibrating the step cost of", "calibrated")
            ),
        )
        # speculation off (the file can switch it off), then k-1 .. k+1 from 1 up
        assert screen.query_one("#values", Input).value == "0,1,2,3"
        await _until(
            pilot,
            lambda: not screen.running and "calibrated" in _text(screen, "#progress"),
            timeout_s=600.0,  # a hang guard: two rounds, 10 restarts
        )
        assert "step-cost model kept in" in _text(screen, "#progress"), _text(screen, "#progress")
        assert tune_sim.config.read_bytes() == original  # restored byte for byte
        kept = load_models()  # the test's own data folder (tests/conftest.py)
        assert app.board.advice is not None
        model, _ = find_model(app.board.advice.kept.models, tune_sim.url, None, None)
        assert model is not None and model.basis().startswith("tune ")
        assert [m.cost for m in kept.models] == [model.cost]
        await wait_for(
            pilot,
            lambda: not app.alerts.restarting("tuned"),
            "the restart to be over",
            timeout_s=180.0,
            explain=lambda: repr(app.alerts._state("tuned")) + f" now={app._wall_clock()}",
        )
    assert "tuned" in announced
    assert [alert.kind for alert in app.alerts.all_alerts() if alert.kind == "down"] == []
