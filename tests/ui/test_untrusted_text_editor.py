"""Nothing from a config file reaches the terminal raw from the config editor: not from the raw view (a file
with raw ESC bytes is a TOML syntax error, so it opens there), the field view, the launch tab (a valid file
can spell ESC as an escape, `\\u001b`, which the value then holds), the lint view (findings quote the model
name and unknown keys), the title and status line (a file name may hold any character but / and NUL), nor the
save's diff and the questions. Each is drawn to the bytes Textual would write to the terminal."""

from __future__ import annotations

from pathlib import Path

from terminal_bytes import (
    CONTROLS,
    OneScreenApp,
    assert_clean,
    assert_nothing_injected,
    editing,
    region_text,
    terminal_output,
)
from textual.widgets import OptionList, Static, TabbedContent, TextArea
from ui_waiting import wait_for

from tests.untrusted import HOSTILE, hostile_config
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog

# A model name as the config diff quotes it.
HOSTILE_DIFF = f'--- a/c.toml\n+++ b/c.toml\n@@ -1 +1 @@\n-name = "{HOSTILE}"\n+enabled = false\n'


async def test_raw_view_of_a_file_with_control_bytes(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\nname = "{HOSTILE}"\n', encoding="utf-8")
    async with editing(config) as (pilot, screen):
        assert screen.query_one(TabbedContent).active == "raw-pane"
        raw_view = screen.query_one("#raw", TextArea)
        await assert_nothing_injected(pilot, raw_view, "]0;PWNED[2J]52;c;aGVsbG8=evil", raw=CONTROLS)


async def test_field_view_of_an_escaped_control_character(tmp_path: Path) -> None:
    async with editing(hostile_config(tmp_path / "config.toml")) as (pilot, screen):
        assert screen.document is not None
        field = screen.query_one("#field-model--name Input")
        await assert_nothing_injected(pilot, field, "aGVsbG8=evil31m", raw=CONTROLS)


async def test_launch_tab_of_an_escaped_control_character(tmp_path: Path) -> None:
    async with editing(hostile_config(tmp_path / "config.toml")) as (pilot, screen):
        await pilot.press("f5")  # the launch tab
        await assert_nothing_injected(pilot, screen.query_one("#launch-text"), "evil", raw=CONTROLS)


async def test_lint_findings_quoting_a_hostile_model_name(tmp_path: Path) -> None:
    config = hostile_config(tmp_path / "config.toml")
    config.write_text(config.read_text() + '[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 2\n')
    async with editing(config) as (pilot, screen):
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
    async with editing(config) as (pilot, screen):
        await assert_nothing_injected(pilot, screen.query_one("#editor-title"), "evil")
        await assert_nothing_injected(pilot, screen.query_one("#editor-status"), "evil")


async def test_the_editors_diff_and_question_dialogs() -> None:
    """A TOML comment may hold C1 controls and bidi overrides: the save's diff shows them harmless; the
    questions quote the file's name."""
    dialog = DiffDialog(f"Save c{HOSTILE}.toml?", HOSTILE_DIFF)
    async with OneScreenApp(dialog).run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(pilot.app.screen.query("#diff")))
        screen = pilot.app.screen
        await assert_nothing_injected(pilot, screen.query(Static).first(), "Save cevil")
        await assert_nothing_injected(pilot, screen.query_one("#diff"), '-name = "evil')
    question = ConfirmDialog(f"c{HOSTILE}.toml has unsaved changes. Quit spectop?", {"n": ""})
    async with OneScreenApp(question).run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmDialog))
        await assert_nothing_injected(pilot, pilot.app.screen.query(Static).first(), "cevil")
