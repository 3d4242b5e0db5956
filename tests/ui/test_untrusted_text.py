"""Nothing from a server, a log, a recording, Prometheus or a config file reaches the terminal raw."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from cut_figures import (
    CONTROLS,
    OneScreenApp,
    assert_clean,
    assert_nothing_injected,
    region_text,
    terminal_output,
)
from recording_factory import recording_lines
from rich.text import Text
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Header, OptionList, Static, TabbedContent, TextArea
from textual.widgets._toast import Toast
from ui_waiting import editing, polling_fast, press_into, wait_for

from tests.fleet.fake_fleet import fleet_app, fleet_settings
from tests.fleet.fake_prometheus import FakePrometheus
from tests.untrusted import HOSTILE, OOM_LINE, Reply, ReplyServer, hostile_config, hostile_fleet, hostile_page
from tui.advice.guard_control import GuardOffer
from tui.screens.alerts import AlertsScreen
from tui.screens.detail import DetailScreen
from tui.screens.guard import GuardDialog
from tui.screens.tune import TuneScreen
from tui.settings import EndpointSettings, Settings
from tui.sources.fleet import SOURCE_NAME
from tui.telemetry.alerts import AlertEngine
from tui.telemetry.reading import EndpointReading
from tui.tune.runner import TuneOptions, TuneRun
from tui.ui.app import SpectopApp
from tui.ui.editor_app import EditorApp
from tui.ui.terminal_guard import DropControls, GuardsDrawnText
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.figure_table import FigureTable
from tui.widgets.fleet_table import FleetTable
from tui.widgets.log_pane import LogPane

# A model name as the guard's decision and the config diff quote it.
HOSTILE_DIFF = f'--- a/c.toml\n+++ b/c.toml\n@@ -1 +1 @@\n-name = "{HOSTILE}"\n+enabled = false\n'


@pytest.fixture
async def server() -> AsyncIterator[ReplyServer]:
    async with ReplyServer(
        [Reply(hostile_page("metrics_t0.txt")), Reply(hostile_page("metrics_t1.txt"))]
    ) as s:
        yield s


async def test_card_toast_detail_log_pane_and_alerts(server: ReplyServer, tmp_path: Path) -> None:
    log = tmp_path / "server.log"  # appears once the app runs: the tailer then reads it from its start
    endpoint = EndpointSettings(name="x", url=server.url, backend="vllm", log_file=log)
    app = polling_fast(endpoint)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        card = app.screen.query_one(EndpointCard)
        await wait_for(pilot, lambda: "evil" in card.data.title())
        log.write_text(OOM_LINE + "\n" + f"(APIServer pid=1) INFO 05-01 14:39:07 [x.py:1] {HOSTILE}\n")
        await wait_for(pilot, lambda: any(alert.kind == "oom" for alert in app.alerts.active("x")))
        await wait_for(pilot, lambda: "CUDA out of memory" in str(card.render()))
        await wait_for(pilot, lambda: bool(app.screen.query(Toast)))  # first: a toast goes after 6 s
        await assert_nothing_injected(pilot, app.screen.query(Toast).last(), "memory. evil")
        await assert_nothing_injected(pilot, card, "x · vllm · evil")  # the title: the model name
        await assert_nothing_injected(pilot, card, "CUDA out of memory. evil")  # the badge line: the alert
        await app.push_screen(DetailScreen(app.context, "x"))
        await wait_for(pilot, lambda: bool(app.screen.query(LogPane) and app.screen.query("HeaderTitle")))
        await assert_nothing_injected(pilot, app.screen.query_one(Header), "x · vllm · evil")
        log_pane = app.screen.query_one(LogPane)
        await assert_nothing_injected(pilot, log_pane, "CUDA out of memory. evil")
        await assert_nothing_injected(pilot, log_pane, "14:39:07 evil")
        await app.push_screen(AlertsScreen(app.board.alerts))
        await wait_for(pilot, lambda: bool(app.screen.query(DataTable)))
        await assert_nothing_injected(pilot, app.screen.query_one(DataTable), "CUDA out of memory. evil")


def hostile_notes_recording(path: Path) -> Path:
    lines = recording_lines()
    for index, line in enumerate(lines):
        if '"name":"mtp-on"' in line and '"kind":"reading"' in line:
            reading = EndpointReading.model_validate_json(line)
            reading.figures.notes["window"] = f"restarted {HOSTILE} during the window"
            lines[index] = reading.model_dump_json()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_replayed_notes_on_the_detail_screen(
    tmp_path: Path, replay_app: Callable[..., SpectopApp]
) -> None:
    recording = hostile_notes_recording(tmp_path / "recording.jsonl")
    app = replay_app(replay_path=recording)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.replay_done and bool(app.screen.query(EndpointCard)))
        await press_into(pilot, DetailScreen, "enter")
        table = app.screen.query_one(FigureTable)
        await wait_for(pilot, lambda: "evil" in region_text(app, table))
        assert_clean(region_text(app, table), terminal_output(app))


@pytest.mark.parametrize(
    ("dialog", "drawn"),
    [
        (
            lambda: GuardDialog.of(
                GuardOffer(f"x{HOSTILE}", None, f"acceptance 0.12 < 0.40 on {HOSTILE}", HOSTILE_DIFF)
            ),
            {"Static": "guard · xevil", ".figures": "0.40 on evil", "#guard-diff": '-name = "evil'},
        ),
        # a TOML comment may hold C1 controls and bidi overrides; the questions quote the file's name
        (
            lambda: DiffDialog(f"Save c{HOSTILE}.toml?", HOSTILE_DIFF),
            {"Static": "Save cevil", "#diff": '-name = "evil'},
        ),
        (
            lambda: ConfirmDialog(f"c{HOSTILE}.toml has unsaved changes. Quit spectop?", {"n": ""}),
            {"Static": "cevil"},
        ),
    ],
    ids=["guard-offer", "editor-diff", "editor-question"],
)
async def test_dialogs(dialog: Callable[[], Screen[object]], drawn: dict[str, str]) -> None:
    screen = dialog()
    async with OneScreenApp(screen).run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: all(screen.query(selector) for selector in drawn))
        for selector, text in drawn.items():
            await assert_nothing_injected(pilot, screen.query(selector).first(), text)


async def test_guard_past_action_from_the_alerts_list() -> None:
    alerts = AlertEngine()
    alerts.note(f"x{HOSTILE}", 1_767_225_600.0, f"switched speculation off: {HOSTILE}", HOSTILE_DIFF)
    async with OneScreenApp(AlertsScreen(alerts)).run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(pilot.app.screen.query(DataTable)))
        table = pilot.app.screen.query_one(DataTable)
        await assert_nothing_injected(pilot, table, "switched speculation off: evil")
        await press_into(pilot, GuardDialog, "enter")  # the guard action's diff
        dialog = pilot.app.screen
        await assert_nothing_injected(pilot, dialog.query_one(".figures"), "off: evil")
        await assert_nothing_injected(pilot, dialog.query_one("#guard-diff"), '-name = "evil')


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
        await assert_nothing_injected(pilot, diff, "# evil")
        await assert_nothing_injected(pilot, diff, "+++ c.toml (new)")
        await assert_nothing_injected(pilot, screen.query_one("#title", Static), "tune x: ")


async def test_restart_dialog_output_and_the_logs_last_errors(tmp_path: Path) -> None:
    """The command's output (a script tailing the server's log) and the log's errors once it failed."""
    log = tmp_path / "server.log"
    script = tmp_path / "restart.py"
    script.write_text(f"import sys\nprint({HOSTILE!r})\nsys.exit(3)\n", encoding="utf-8")
    dialog = RestartDialog([sys.executable, str(script)], None, None, log_file=log)
    async with OneScreenApp(dialog).run_test(size=(100, 30)) as pilot:
        log.write_text(OOM_LINE + "\n", encoding="utf-8")  # after the restart began: its own lines
        await wait_for(pilot, lambda: bool(dialog.query("#restart-log")))
        await assert_nothing_injected(pilot, dialog.query_one("#restart-log"), "evil")
        status = dialog.query_one("#restart-status")
        await wait_for(pilot, lambda: dialog.finished)
        await assert_nothing_injected(pilot, status, "CUDA out of memory. evil")


async def test_fleet_table_and_the_prometheus_down_alert() -> None:
    fleet = hostile_fleet(40)  # enough for the table (a few get cards)
    async with FakePrometheus(fleet.answer) as prometheus:
        app = fleet_app(fleet_settings(prometheus.url))
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.readings) == 40 and bool(app.screen.query(FleetTable)))
            await assert_nothing_injected(pilot, app.screen.query_one(FleetTable), "10.1.0.1evil")
            error = {"status": "error", "errorType": f"bad{HOSTILE}", "error": f"query failed {HOSTILE}"}
            fleet.failing = (422, error, 0.0)
            await wait_for(pilot, lambda: any(a.kind == "source_down" for a in app.alerts.active()))
            await wait_for(pilot, lambda: "Prometheus DOWN" in app.sub_title)
            header = app.screen.query_one(Header)
            await assert_nothing_injected(pilot, header, "Prometheus DOWN: Prometheus error (badevil")
            await app.push_screen(AlertsScreen(app.board.alerts))
            await wait_for(pilot, lambda: bool(app.screen.query(DataTable)))
            alert = next(a for a in app.alerts.active() if a.kind == "source_down")
            assert alert.endpoint == SOURCE_NAME
            await assert_nothing_injected(pilot, app.screen.query_one(DataTable), "failing: error (badevil")


class RawLabel(GuardsDrawnText, App[None]):
    """A widget that forgets the sanitizer: the hostile text straight into a Static."""

    def compose(self) -> ComposeResult:
        yield Static(Text(f"model {HOSTILE} end"), id="raw")


async def test_the_net_under_every_widget_and_spectop_apps_install_it(tmp_path: Path) -> None:
    app = RawLabel()
    async with app.run_test(size=(60, 5)) as pilot:
        static = app.query_one("#raw", Static)
        await wait_for(pilot, lambda: "end" in region_text(app, static))
        frame = terminal_output(app)
    assert_clean(frame, raw=CONTROLS)
    assert "evil" in frame
    # through Textual's public `get_line_filters`: the net above is what these apps' filters do
    for each in (SpectopApp(Settings(), theme_folders=[], remember_theme_choice=False), EditorApp(tmp_path)):
        assert any(isinstance(line_filter, DropControls) for line_filter in each.get_line_filters())


async def test_raw_view_of_a_file_with_control_bytes(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\nname = "{HOSTILE}"\n', encoding="utf-8")
    async with editing(config, size=(100, 24)) as (pilot, screen):
        assert screen.query_one(TabbedContent).active == "raw-pane"
        raw_view = screen.query_one("#raw", TextArea)
        await assert_nothing_injected(pilot, raw_view, "]0;PWNED[2J]52;c;aGVsbG8=evil", raw=CONTROLS)


async def test_field_launch_and_lint_views_of_a_hostile_model_name(tmp_path: Path) -> None:
    config = hostile_config(tmp_path / "config.toml")
    config.write_text(config.read_text() + '[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 2\n')
    async with editing(config, size=(100, 24)) as (pilot, screen):
        assert screen.document is not None
        field = screen.query_one("#field-model--name Input")
        await assert_nothing_injected(pilot, field, "aGVsbG8=evil31m", raw=CONTROLS)
        await pilot.press("f5")  # the launch tab
        await assert_nothing_injected(pilot, screen.query_one("#launch-text"), "evil", raw=CONTROLS)
        await pilot.press("f4")
        lint = screen.query_one("#lint-list", OptionList)
        await wait_for(pilot, lambda: "MTP heads" in region_text(pilot.app, lint))
        drawn = region_text(pilot.app, lint)
        assert_clean(drawn, terminal_output(pilot.app), raw=CONTROLS)
        # The whole OSC 52 went (not only its ESC and BEL, as the net alone would leave "…aGVsbG8=evil"):
        # the finding quoting the model name was made safe where it was built.
        assert "evil\ufffd31m" in drawn and "aGVsbG8=evil" not in drawn


async def test_editor_status_line_of_a_file_named_with_control_characters(tmp_path: Path) -> None:
    config = tmp_path / f"c{HOSTILE}.toml"
    config.write_text('[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 2\n', encoding="utf-8")
    async with editing(config, size=(100, 24)) as (pilot, screen):
        await assert_nothing_injected(pilot, screen.query_one("#editor-title"), "evil")
        await assert_nothing_injected(pilot, screen.query_one("#editor-status"), "evil")
