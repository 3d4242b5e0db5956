"""Nothing from a server or a file reaches the terminal raw on the screens added after issue 11's fix:
the guard's dialog (an offer, and a past action opened from the alerts list), the tune screen's diff
of the config file, the burst history's URLs (screen and `spectop bench --history`), and the fleet
dashboard (instance labels and Prometheus's own error text in its "source down" alert).

Each is drawn to the bytes Textual would write to the terminal (`test_injection.terminal_output`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench_fixtures import BenchTestApp
from test_injection import HOSTILE, assert_nothing_injected
from textual.app import App
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static
from ui_waiting import wait_for

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests.bursts.test_sanitize_bench import hostile_burst
from tests.cli.test_sanitize_cli import OOM_LINE, assert_no_raw_controls, spectop
from tests.fleet.fake_fleet import Fleet40, fleet_app, fleet_settings, instances
from tests.fleet.fake_prometheus import FakePrometheus
from tui.bench.burst_store import save_burst
from tui.screens.alerts import AlertsScreen
from tui.screens.bench import BenchScreen
from tui.screens.editor import EditorScreen
from tui.screens.guard import GuardDialog
from tui.screens.tune import TuneScreen
from tui.settings import EndpointSettings
from tui.sources.fleet import SOURCE_NAME
from tui.telemetry.alerts import AlertEngine
from tui.tune.runner import TuneOptions, TuneRun
from tui.ui.editor_app import EditorApp
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog
from tui.widgets.fleet_table import FleetTable

# A model name / log line as the guard's decision and the config diff quote them.
HOSTILE_DIFF = f'--- a/c.toml\n+++ b/c.toml\n@@ -1 +1 @@\n-name = "{HOSTILE}"\n+enabled = false\n'


class OneScreenApp(App[None]):
    def __init__(self, screen: Screen[object]) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)


async def test_guard_offer_dialog() -> None:
    dialog = GuardDialog.offering(f"x{HOSTILE}", f"acceptance 0.12 < 0.40 on {HOSTILE}", HOSTILE_DIFF)
    async with OneScreenApp(dialog).run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(pilot.app.screen.query("#guard-diff")))
        screen = pilot.app.screen
        figures, title = screen.query_one(".figures", Static), screen.query(Static).first()
        await assert_nothing_injected(pilot, title, "guard · xevil")  # type: ignore[arg-type]
        await assert_nothing_injected(pilot, figures, "0.40 on evil")  # type: ignore[arg-type]
        await assert_nothing_injected(pilot, screen.query_one("#guard-diff"), '-name = "evil')  # type: ignore[arg-type]


async def test_guard_past_action_from_the_alerts_list() -> None:
    alerts = AlertEngine()
    alerts.note(f"x{HOSTILE}", 1_767_225_600.0, f"switched speculation off: {HOSTILE}", HOSTILE_DIFF)
    async with OneScreenApp(AlertsScreen(alerts)).run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(pilot.app.screen.query(DataTable)))
        table = pilot.app.screen.query_one(DataTable)
        await assert_nothing_injected(pilot, table, "switched speculation off: evil")  # type: ignore[arg-type]
        await pilot.press("enter")  # the guard action's diff
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, GuardDialog))
        dialog = pilot.app.screen
        await assert_nothing_injected(pilot, dialog.query_one(".figures"), "off: evil")  # type: ignore[arg-type]
        await assert_nothing_injected(pilot, dialog.query_one("#guard-diff"), '-name = "evil')  # type: ignore[arg-type]


async def test_tune_apply_diff_of_a_config_with_control_characters(tmp_path: Path) -> None:
    """TOML allows C1 controls and bidi overrides in comments; the file name may hold anything."""
    config = tmp_path / "c\x1b]0;PWNED\x07.toml"
    config.write_text(
        '[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 1  # evil\x9b31m\u202e\n', encoding="utf-8"
    )
    endpoint = EndpointSettings(name="x", url="http://127.0.0.1:1", config_file=config,
                                restart_command=["true"])  # fmt: skip
    tune = TuneRun(TuneOptions(config_file=config, endpoint=endpoint.url, restart_command=["true"],
                               values=(0, 1, 2)))  # fmt: skip
    result = await tune.prepare()
    screen = TuneScreen(endpoint)
    async with OneScreenApp(screen).run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(screen.query("#diff")))
        screen.tune, screen.result = tune, result.model_copy(update={"best": {result.concurrencies[0]: 2}})
        screen.query_one("#tune-table", DataTable).focus()  # as after a sweep: a is the screen's key
        await pilot.press("a")  # the diff of the best value, to confirm
        await wait_for(pilot, lambda: screen.pending_apply == 2)
        diff = screen.query_one("#diff", Static)
        await assert_nothing_injected(pilot, diff, "# evil")  # type: ignore[arg-type]
        await assert_nothing_injected(pilot, diff, "+++ c.toml (new)")  # type: ignore[arg-type]
        await assert_nothing_injected(pilot, screen.query_one("#title", Static), "tune x: ")  # type: ignore[arg-type]


def hostile_url_burst() -> Path:
    burst = hostile_burst()
    for arm in burst.arms:
        arm.url = f"http://e{HOSTILE}x:8000/v1"
    return save_burst(burst)


@pytest.mark.usefixtures("bench_folders")
async def test_burst_history_row_with_a_hostile_endpoint_url() -> None:
    hostile_url_burst()
    async with BenchTestApp([]).run_test(size=(140, 30)) as pilot:
        screen = pilot.app.screen
        assert isinstance(screen, BenchScreen)
        table = screen.query_one("#history-table", DataTable)
        await wait_for(pilot, lambda: table.row_count == 1)
        await pilot.press("h")
        await assert_nothing_injected(pilot, table, "eevil")  # type: ignore[arg-type]


@pytest.mark.usefixtures("bench_folders")
async def test_bench_history_command_with_a_hostile_endpoint_url() -> None:
    hostile_url_burst()
    code, out, err = await spectop("bench", "--history")
    assert code == 0, err
    assert "eevil" in out
    assert_no_raw_controls(out + err)


@pytest.fixture
def hostile_fleet() -> Fleet40:
    members = instances(40)  # enough for the table (a few get cards)
    members[0].name = f"10.1.0.1{HOSTILE}:8000"  # an instance label, as Prometheus answers it
    return Fleet40(members=members)


async def test_fleet_table_and_the_prometheus_down_alert(
    hostile_fleet: Fleet40, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))  # not the user's theme choice
    async with FakePrometheus(hostile_fleet.answer) as prometheus:
        app = fleet_app(fleet_settings(prometheus.url))
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.readings) == 40 and bool(app.screen.query(FleetTable)))
            await assert_nothing_injected(pilot, app.screen.query_one(FleetTable), "10.1.0.1evil")  # type: ignore[arg-type]
            error = {"status": "error", "errorType": f"bad{HOSTILE}", "error": f"query failed {HOSTILE}"}
            hostile_fleet.failing = (422, error, 0.0)
            await wait_for(pilot, lambda: any(a.kind == "source_down" for a in app.alerts.active()))
            await wait_for(pilot, lambda: "Prometheus DOWN" in app.sub_title)
            await assert_nothing_injected(
                pilot, app.screen.query_one(Header), "Prometheus DOWN: Prometheus error (badevil"
            )  # type: ignore[arg-type]
            await app.push_screen(AlertsScreen(app.board.alerts))
            await wait_for(pilot, lambda: bool(app.screen.query(DataTable)))
            alert = next(a for a in app.alerts.active() if a.kind == "source_down")
            assert alert.endpoint == SOURCE_NAME
            await assert_nothing_injected(pilot, app.screen.query_one(DataTable), "failing: error (badevil")  # type: ignore[arg-type]


async def test_restart_dialog_output_and_the_logs_last_errors(tmp_path: Path) -> None:
    """The restart command's output (a `docker restart`, a script tailing the server's log) and the
    error lines of the endpoint's log, shown when the command failed."""
    log = tmp_path / "server.log"
    script = tmp_path / "restart.py"
    script.write_text(f"import sys\nprint({HOSTILE!r})\nsys.exit(3)\n", encoding="utf-8")
    command = [sys.executable, str(script)]
    dialog = RestartDialog(command, None, None, log_file=log)
    async with OneScreenApp(dialog).run_test(size=(100, 30)) as pilot:  # type: ignore[arg-type]
        log.write_text(OOM_LINE + "\n", encoding="utf-8")  # after the restart began: its own lines
        await wait_for(pilot, lambda: bool(dialog.query("#restart-log")))
        await assert_nothing_injected(pilot, dialog.query_one("#restart-log"), "evil")  # type: ignore[arg-type]
        status = dialog.query_one("#restart-status")
        await wait_for(pilot, lambda: dialog.finished)
        await assert_nothing_injected(pilot, status, "CUDA out of memory. evil")  # type: ignore[arg-type]


async def test_editor_status_line_of_a_file_named_with_control_characters(tmp_path: Path) -> None:
    """The status line says which file is open: a file name may hold any character but / and NUL."""
    config = tmp_path / f"c{HOSTILE}.toml"
    config.write_text('[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 2\n', encoding="utf-8")
    app = EditorApp(config)
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen.loaded)
        screen = app.screen
        await assert_nothing_injected(pilot, screen.query_one("#editor-title"), "evil")  # type: ignore[arg-type]
        await assert_nothing_injected(pilot, screen.query_one("#editor-status"), "evil")  # type: ignore[arg-type]


async def test_the_editors_diff_and_question_dialogs() -> None:
    """A TOML comment may hold C1 controls and bidi overrides: the save's diff shows them harmless; the
    questions quote the file's name."""
    async with OneScreenApp(DiffDialog(f"Save c{HOSTILE}.toml?", HOSTILE_DIFF)).run_test(
        size=(100, 30)
    ) as pilot:  # type: ignore[arg-type]
        await wait_for(pilot, lambda: bool(pilot.app.screen.query("#diff")))
        screen = pilot.app.screen
        await assert_nothing_injected(pilot, screen.query(Static).first(), "Save cevil")  # type: ignore[arg-type]
        await assert_nothing_injected(pilot, screen.query_one("#diff"), '-name = "evil')  # type: ignore[arg-type]
    question = ConfirmDialog(f"c{HOSTILE}.toml has unsaved changes. Quit spectop?", {"n": ""})
    async with OneScreenApp(question).run_test(size=(100, 30)) as pilot:  # type: ignore[arg-type]
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmDialog))
        shown = pilot.app.screen.query(Static).first()
        await assert_nothing_injected(pilot, shown, "cevil")  # type: ignore[arg-type]
