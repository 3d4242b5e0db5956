"""Save & restart against a real sim: "restarting" on the card, "down" only if the restart fails."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_waiting import opened_editor, polling_fast, press_into, wait_for

from tests.sim.conftest import spawn_sim
from tui.settings import EndpointSettings
from tui.ui.app import SpectopApp
from tui.widgets.config_dialogs import ConfirmDialog, RestartDialog
from tui.widgets.endpoint_card import EndpointCard


@pytest.fixture
def sim_process(config_toml: Path) -> Iterator[tuple[int, str, Path]]:
    process, url = spawn_sim("--config", str(config_toml))
    try:
        yield process.pid, url, config_toml
    finally:
        process.terminate()
        process.wait(timeout=5)


def _endpoint(url: str, config: Path, restart: list[str]) -> EndpointSettings:
    return EndpointSettings(name="sim", url=url, backend="vllm", config_file=config, restart_command=restart)


def _signal_command(pid: int, signal_name: str, sleep_s: float, exit_code: int) -> list[str]:
    """A restart command: signal the sim, wait until it is down, exit with `exit_code`."""
    code = f"import os, signal, time; os.kill({pid}, signal.{signal_name}); time.sleep({sleep_s})"
    return [sys.executable, "-c", f"{code}; exit({exit_code})"]


async def _save_and_restart(pilot: Pilot[object], app: SpectopApp) -> RestartDialog:
    app.open_editor("sim")
    await opened_editor(pilot)
    await press_into(pilot, ConfirmDialog, "ctrl+r")
    await press_into(pilot, RestartDialog, "y")
    assert isinstance(app.screen, RestartDialog)
    return app.screen


async def test_a_planned_restart_shows_restarting_and_raises_no_down_alert(
    sim_process: tuple[int, str, Path],
) -> None:
    pid, url, config = sim_process
    # SIGHUP, as `spectop demo` restarts: the sim stops, stays down for a second and comes back; the command
    # returns at once, so /health may answer before the sim even went down.
    app = polling_fast(_endpoint(url, config, _signal_command(pid, "SIGHUP", sleep_s=0.0, exit_code=0)))
    seen: set[str] = set()
    async with app.run_test(size=(100, 30)) as pilot:
        dashboard = app.screen
        await wait_for(pilot, lambda: app.card_data("sim").status == "up")
        dialog = await _save_and_restart(pilot, app)

        def finished() -> bool:
            seen.add(app.card_data("sim").status)
            return dialog.finished

        await wait_for(pilot, finished, timeout_s=30)
        assert "server is back" in str(dialog.query_one("#restart-status").render())
        assert "restarting" in seen  # the card said so while the sim was down
        await pilot.press("escape")

        def back() -> bool:
            return app.card_data("sim").status == "up" and not app.alerts.restarting("sim")

        await wait_for(pilot, back, timeout_s=20)
        assert not [alert for alert in app.alerts.all_alerts() if alert.kind == "down"]  # not an outage
        assert dashboard.query_one(EndpointCard) is not None


async def test_a_restart_whose_command_fails_raises_down(sim_process: tuple[int, str, Path]) -> None:
    pid, url, config = sim_process
    # The command takes the server down for good (SIGTERM) and then fails.
    app = polling_fast(_endpoint(url, config, _signal_command(pid, "SIGTERM", sleep_s=0.6, exit_code=3)))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.card_data("sim").status == "up")
        dialog = await _save_and_restart(pilot, app)
        await wait_for(pilot, lambda: dialog.finished, timeout_s=30)
        await wait_for(pilot, lambda: any(alert.kind == "down" for alert in app.alerts.active("sim")))
        (down,) = [alert for alert in app.alerts.active("sim") if alert.kind == "down"]
        assert (
            down.severity == "critical"
            and "restart failed" in down.message
            and "exited with 3" in down.message
        )
        assert app.card_data("sim").status == "down"
