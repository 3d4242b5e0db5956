"""Issue 20's injection paths, rendered to the bytes Textual would write: the editor's lint view (findings
quote the file's model name and unknown keys), replayed `figures.notes` on the detail screen, and the net
under every widget (`tui.ui.terminal_guard`: a label that forgot `safe_line` still writes nothing raw)."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.text import Text
from test_injection import FROM_THE_DATA, HOSTILE, region_text, terminal_output
from test_injection_editor import editing
from textual.app import App, ComposeResult
from textual.widgets import OptionList, Static
from ui_waiting import wait_for

sys.path.insert(0, str(Path(__file__).parents[1]))

from recording_factory import recording_lines

from tests.cli.test_sanitize_cli import hostile_config
from tui.paths import themes_dir
from tui.screens.detail import DetailScreen
from tui.settings import Settings
from tui.telemetry.reading import EndpointReading
from tui.ui.app import SpectopApp
from tui.ui.terminal_guard import guard_drawn_text, is_guarded
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.figure_table import FigureTable

CONTROLS = tuple(raw for raw in FROM_THE_DATA if not raw.isprintable())


def assert_clean(drawn: str, frame: str) -> None:
    for text in (drawn, frame):
        for raw in FROM_THE_DATA:
            assert raw not in text, (raw, text)


async def test_lint_findings_quoting_a_hostile_model_name(tmp_path: Path) -> None:
    config = hostile_config(tmp_path / "config.toml")
    config.write_text(config.read_text() + '[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 2\n')
    async with editing(config) as (pilot, screen):
        await pilot.press("f4")
        lint = screen.query_one("#lint-list", OptionList)
        await wait_for(pilot, lambda: "MTP heads" in region_text(pilot.app, lint))  # type: ignore[arg-type]
        drawn, frame = region_text(pilot.app, lint), terminal_output(pilot.app)  # type: ignore[arg-type]
        for raw in CONTROLS:
            assert raw not in drawn and raw not in frame, (raw, drawn)
        # The whole OSC 52 went (not only its ESC and BEL, as the net alone would leave "…aGVsbG8=evil"):
        # the finding quoting the model name was made safe where it was built.
        assert "evil\ufffd31m" in drawn and "aGVsbG8=evil" not in drawn


def hostile_notes_recording(path: Path) -> Path:
    lines = recording_lines()
    for index, line in enumerate(lines):
        if '"name":"mtp-on"' in line and '"kind":"reading"' in line:
            reading = EndpointReading.model_validate_json(line)
            reading.figures.notes["window"] = f"restarted {HOSTILE} during the window"
            lines[index] = reading.model_dump_json()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_replayed_notes_on_the_detail_screen(tmp_path: Path) -> None:
    recording = hostile_notes_recording(tmp_path / "recording.jsonl")
    app = SpectopApp(Settings(), replay_path=recording, replay_speed=0.0, theme_folders=[themes_dir()],
                     remember_theme_choice=False)  # fmt: skip
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.replay_done and bool(app.screen.query(EndpointCard)))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen))
        table = app.screen.query_one(FigureTable)
        await wait_for(pilot, lambda: "evil" in region_text(app, table))
        assert_clean(region_text(app, table), terminal_output(app))


class RawLabel(App[None]):
    """A widget that forgets the sanitizer: the hostile text straight into a Static."""

    def compose(self) -> ComposeResult:
        yield Static(Text(f"model {HOSTILE} end"), id="raw")


async def test_the_net_under_every_widget() -> None:
    assert guard_drawn_text() and is_guarded()
    app = RawLabel()
    async with app.run_test(size=(60, 5)) as pilot:
        static = app.query_one("#raw", Static)
        await wait_for(pilot, lambda: "end" in region_text(app, static))  # type: ignore[arg-type]
        frame = terminal_output(app)  # type: ignore[arg-type]
    for raw in CONTROLS:
        assert raw not in frame, (raw, frame)
    assert "evil" in frame


def test_spectop_apps_install_the_net() -> None:
    SpectopApp(Settings(), theme_folders=[], remember_theme_choice=False)
    assert is_guarded()
