"""The fallback guard in the running dashboard, against a real `spectop sim` restarted by the demo's
control socket: acceptance lowered through `/sim/control` → the sustained alert → `ask` offers (diff shown)
or `auto` switches speculation off; every action in the alerts list and the recording."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from tests.tune.conftest import changed_lines, running_sim, write_config
from tests.ui.ui_waiting import wait_for
from tui.advice.guard import ACTION_WORDS
from tui.advice.guard_control import ACCEPTANCE_KINDS
from tui.paths import themes_dir
from tui.screens.alerts import AlertsScreen
from tui.screens.editor import EditorScreen
from tui.screens.guard import GuardDialog
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.sim.supervisor import RESTARTED, DemoSim, DemoSims
from tui.telemetry.alerts import Alert
from tui.ui.app import SpectopApp


class GuardSim:
    def __init__(self, sims: DemoSims, sim: DemoSim) -> None:
        self.sims, self.sim = sims, sim

    def restarts(self) -> int:
        return self.sim.stdout_path.read_text(encoding="utf-8", errors="replace").count(RESTARTED)

    def endpoint(self, guard: str, cooldown_s: float = 600.0) -> EndpointSettings:
        return EndpointSettings(
            name="guarded",
            url=self.sim.url,
            backend="vllm",
            config_file=self.sim.config,
            log_file=self.sim.log_file,
            restart_command=self.sims.restart_command(self.sim.name),
            acceptance_threshold=0.5,  # the file's ~68% is fine; lowered to ~20% it is not
            guard=guard,  # type: ignore[arg-type]
            guard_cooldown_s=cooldown_s,
        )

    def lower_acceptance(self) -> None:
        response = httpx.post(self.sim.url + "/sim/control", json={"acceptance": 0.3}, timeout=5)
        assert response.status_code == 200, response.text


@pytest.fixture
def guard_sim(tmp_path: Path) -> Iterator[GuardSim]:
    folder = tmp_path / "sim"
    folder.mkdir()
    with running_sim(write_config(folder / "config.toml"), "guarded", load_rps=8.0) as running:
        yield GuardSim(running.sims, running.sim)


def _app(endpoint: EndpointSettings, record: Path) -> SpectopApp:
    settings = Settings(
        poll_interval_s=0.2, window_s=1.5, alerts=AlertSettings(sustained_s=0.5), endpoints=[endpoint]
    )
    return SpectopApp(
        settings,
        record_path=record,
        theme_folders=[themes_dir()],  # type: ignore[arg-type]
        remember_theme_choice=False,
    )


def _guard_alerts(app: SpectopApp) -> list[Alert]:
    return [alert for alert in app.alerts.all_alerts() if alert.kind == "guard"]


GUARD_OFFERED, GUARD_DECLINED, GUARD_SWITCHED_OFF = (
    f"guard {ACTION_WORDS[action]}" for action in ("offered", "declined", "switched_off")
)


POLLS_WITH_THE_ALERT = 10  # 2 s of 0.2 s polls: many chances for the guard to offer again


def _actions(app: SpectopApp) -> list[str]:
    return [alert.message.split(":", 1)[0] for alert in reversed(_guard_alerts(app))]  # oldest first


def _recorded(path: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if line.get("kind") == "guard"]


async def _acceptance_known(pilot: Pilot[object], app: SpectopApp) -> None:
    def known() -> bool:
        reading = app.readings.get("guarded")
        return reading is not None and reading.figures.acceptance_rate is not None

    await wait_for(pilot, known)
    assert not app.alerts.active("guarded")  # fine before it is lowered: nothing to guard


async def test_ask_offers_the_diff_and_a_yes_switches_speculation_off(
    guard_sim: GuardSim, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    app = _app(guard_sim.endpoint("ask"), record)
    async with app.run_test(size=(80, 24)) as pilot:
        await _acceptance_known(pilot, app)
        assert not isinstance(app.screen, GuardDialog)
        guard_sim.lower_acceptance()
        await wait_for(pilot, lambda: isinstance(app.screen, GuardDialog))
        dialog = app.screen
        assert isinstance(dialog, GuardDialog)
        assert "-enabled = true" in dialog.diff and "+enabled = false" in dialog.diff
        assert "below 50%" in dialog.figures
        before = guard_sim.restarts()
        await pilot.press("y")
        await wait_for(pilot, lambda: GUARD_SWITCHED_OFF in _actions(app))
        assert not isinstance(app.screen, GuardDialog)
        assert "enabled = false" in guard_sim.sim.config.read_text(encoding="utf-8")
        assert guard_sim.restarts() == before + 1  # the restart command ran: the sim re-read its config
        assert _actions(app) == [GUARD_OFFERED, GUARD_SWITCHED_OFF]
        # The server is back without speculation: no acceptance any more, so nothing to guard.
        await wait_for(pilot, lambda: not app.alerts.restarting("guarded"))
        await wait_for(pilot, lambda: not app.alerts.active("guarded"))
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AlertsScreen))
        table = app.screen.query_one(DataTable)
        rows = [[str(cell) for cell in table.get_row_at(index)] for index in range(table.row_count)]
        guard_rows = [row for row in rows if row[0] == "GUARD"]
        assert len(guard_rows) == 2 and "switched speculation off" in guard_rows[0][4]
        table.move_cursor(row=rows.index(guard_rows[0]))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GuardDialog))
        assert "+enabled = false" in app.screen.diff  # type: ignore[attr-defined]
        await pilot.press("escape")
    recorded = _recorded(record)
    assert [line["action"] for line in recorded] == ["offered", "switched_off"]
    assert "+enabled = false" in str(recorded[1]["diff"]) and recorded[1]["threshold"] == 0.5
    replay = SpectopApp(
        Settings(),
        replay_path=record,
        replay_speed=0.0,
        theme_folders=[themes_dir()],  # type: ignore[arg-type]
        remember_theme_choice=False,
    )
    async with replay.run_test(size=(80, 24)) as pilot:  # the replay shows the guard's actions too
        await wait_for(pilot, lambda: replay.replay_done)
        assert _actions(replay) == [GUARD_OFFERED, GUARD_SWITCHED_OFF]
        assert "+enabled = false" in _guard_alerts(replay)[0].diff


async def test_auto_switches_without_a_dialog_and_records_it(guard_sim: GuardSim, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    before = guard_sim.sim.config.read_text(encoding="utf-8")
    app = _app(guard_sim.endpoint("auto"), record)
    dialogs: list[object] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await _acceptance_known(pilot, app)
        guard_sim.lower_acceptance()

        def switched() -> bool:
            dialogs.extend(screen for screen in app.screen_stack if isinstance(screen, GuardDialog))
            return GUARD_SWITCHED_OFF in _actions(app)

        await wait_for(pilot, switched)
        assert not dialogs
        assert _actions(app) == [GUARD_SWITCHED_OFF]
        assert "+enabled = false" in _guard_alerts(app)[0].diff
        after = guard_sim.sim.config.read_text(encoding="utf-8")
        assert changed_lines(before, after) == ["-enabled = true", "+enabled = false"]
        assert guard_sim.restarts() == 1
        await wait_for(pilot, lambda: not app.alerts.restarting("guarded"))
        assert "spec_decode" not in httpx.get(guard_sim.sim.url + "/metrics", timeout=5).text  # off now
    assert [line["action"] for line in _recorded(record)] == ["switched_off"]


async def test_the_guard_waits_while_the_user_edits_and_a_declined_offer_is_not_made_again_in_the_cool_down(
    guard_sim: GuardSim, tmp_path: Path
) -> None:
    original = guard_sim.sim.config.read_bytes()
    app = _app(guard_sim.endpoint("ask"), tmp_path / "rec.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        await _acceptance_known(pilot, app)
        app.open_editor("guarded")
        await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen.loaded)
        guard_sim.lower_acceptance()
        await wait_for(pilot, lambda: bool(app.alerts.active("guarded")))
        polled = app.readings["guarded"].time
        await wait_for(pilot, lambda: app.readings["guarded"].time > polled + 1.0)
        assert isinstance(app.screen, EditorScreen) and not _actions(app)  # its write would race the editor's
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, GuardDialog))
        assert _actions(app) == [GUARD_OFFERED]
        await pilot.press("n")
        await wait_for(pilot, lambda: GUARD_DECLINED in _actions(app))
        # The alert stays on for many more polls; the guard stays quiet (cool-down of 600 s). Counted in
        # polls that read it on (a loaded machine's sim may idle a window: unknown acceptance ends it).
        polls_with_the_alert: set[float] = set()
        offered_again: list[GuardDialog] = []

        def many_polls_with_the_alert() -> bool:
            offered_again.extend(s for s in app.screen_stack if isinstance(s, GuardDialog))
            if any(alert.kind in ACCEPTANCE_KINDS for alert in app.alerts.active("guarded")):
                polls_with_the_alert.add(app.readings["guarded"].time)
            return len(polls_with_the_alert) >= POLLS_WITH_THE_ALERT

        await wait_for(pilot, many_polls_with_the_alert)
        assert not offered_again and not isinstance(app.screen, GuardDialog)
        assert _actions(app) == [GUARD_OFFERED, GUARD_DECLINED]
    assert guard_sim.sim.config.read_bytes() == original
    assert guard_sim.restarts() == 0
