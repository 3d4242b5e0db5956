"""Pilot tests of the config editor: edit a field, see the diff, save, see the file; errors block saves."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import httpx
import pytest
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Input, Label, Log, OptionList, Select, Static, TabbedContent, TextArea
from ui_waiting import (
    editing,
    opened_editor,
    press_at_once,
    press_into,
    press_then_pause,
    wait_for,
    wait_for_screen,
)

from tui.configs.document import dotted
from tui.configs.schemas import SCHEMAS, field_specs
from tui.paths import sample_configs_dir
from tui.screens.editor import FIELD_KEYS, EditorScreen
from tui.screens.help import key_rows
from tui.ui.editor_app import EditorApp
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog
from tui.widgets.config_field import FOCUS_MARK, ConfigFieldRow
from tui.widgets.edit_mode import HELP_ROW


def field_input(screen: EditorScreen, *path: str) -> Input:
    return screen.query_one(f"#field-{'--'.join(path)} Input", Input)


async def type_into(pilot: Pilot, widget: Input, text: str, *, enter: bool = True) -> None:
    widget.focus()
    widget.value = ""
    await pilot.pause()
    await pilot.press("i", *text)  # i: into edit mode
    if enter:
        await pilot.press("enter")
    await pilot.pause()


async def save_to_the_diff(pilot: Pilot) -> DiffDialog:
    await pilot.press("ctrl+s")
    await wait_for_screen(pilot, DiffDialog)
    assert isinstance(pilot.app.screen, DiffDialog)
    return pilot.app.screen


async def test_edit_a_field_see_the_diff_save_see_the_file_and_never_overwrite_an_external_change_unasked(
    config_toml: Path,
) -> None:
    before = config_toml.read_bytes()
    async with editing(config_toml) as (pilot, screen):
        await type_into(pilot, field_input(screen, "speculative", "num_speculative_tokens"), "3")
        assert "modified" in str(screen.query_one("#editor-title", Static).render())
        assert config_toml.read_bytes() == before  # nothing written before ctrl+s
        await save_to_the_diff(pilot)
        await press_into(pilot, EditorScreen, "escape")  # declined: nothing written
        assert config_toml.read_bytes() == before
        dialog = await save_to_the_diff(pilot)
        assert "-num_speculative_tokens = 2" in dialog.diff and "+num_speculative_tokens = 3" in dialog.diff
        await pilot.press("y")
        await wait_for(pilot, lambda: config_toml.read_bytes() != before, "the save")
        old, new = before.splitlines(keepends=True), config_toml.read_bytes().splitlines(keepends=True)
        changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]  # strict: no line added or lost
        assert changed == [(b"num_speculative_tokens = 2\n", b"num_speculative_tokens = 3\n")]
        assert (config_toml.parent / "config.toml.bak").read_bytes() == before
        await wait_for_screen(pilot, EditorScreen)
        title = screen.query_one("#editor-title", Static)
        await wait_for(pilot, lambda: "modified" not in str(title.render()), "the title without 'modified'")
        assert not screen.has_unsaved_changes()  # the field just typed counts as saved: esc closes at once
        # a change made on disk meanwhile is not overwritten without asking
        await type_into(pilot, field_input(screen, "scheduler", "max_num_seqs"), "16")
        external = config_toml.read_text().replace("block_size = 16", "block_size = 32")
        config_toml.write_text(external)
        for answer in ("n", "o"):  # no: the file as changed on disk; o: overwritten
            await save_to_the_diff(pilot)
            await press_into(pilot, ConfirmDialog, "y")
            assert "changed on disk" in pilot.app.screen.question
            await press_into(pilot, EditorScreen, answer)
            assert config_toml.read_text() == external or answer == "o"
        await wait_for(pilot, lambda: "max_num_seqs = 16" in config_toml.read_text(), "the overwrite")
        await wait_for(pilot, lambda: not screen.has_unsaved_changes(), "saved")
        await press_then_pause(pilot, "escape")
        assert not isinstance(pilot.app.screen, ConfirmDialog)


def status_text(screen: EditorScreen) -> str:
    return str(screen.query_one("#editor-status", Static).render())


async def test_undo_reverts_the_last_field_change_and_an_invalid_value_is_shown_and_not_applied(
    config_toml: Path,
) -> None:
    before = config_toml.read_text()
    async with editing(config_toml) as (pilot, screen):
        await type_into(pilot, field_input(screen, "speculative", "num_speculative_tokens"), "4")
        await type_into(pilot, field_input(screen, "model", "tensor_parallel_size"), "2")
        assert screen.document is not None
        assert screen.document.get(("model", "tensor_parallel_size")) == 2
        await press_then_pause(pilot, "ctrl+z")
        assert screen.document.get(("model", "tensor_parallel_size")) == 8
        assert screen.document.get(("speculative", "num_speculative_tokens")) == 4
        assert field_input(screen, "model", "tensor_parallel_size").value == "8"
        await press_then_pause(pilot, "ctrl+z")
        assert screen.document.text == before
        assert screen.query_one("#raw", TextArea).text == before
        gpu = field_input(screen, "model", "gpu_memory_utilization")
        await type_into(pilot, gpu, "1.5", enter=False)
        row = screen._rows[("model", "gpu_memory_utilization")]
        assert row.has_class("-invalid")
        assert "must be at most 1" in str(row.query_one(".field-help", Static).render())
        assert screen.document.text == before
        await pilot.press("enter")  # an invalid value is not applied
        assert screen.document.text == before
        await press_then_pause(pilot, "ctrl+s")
        assert not isinstance(pilot.app.screen, DiffDialog)
        assert "cannot save: model.gpu_memory_utilization" in status_text(screen)
        assert pilot.app.focused is gpu
        await type_into(pilot, gpu, "0.8", enter=False)
        dialog = await save_to_the_diff(pilot)  # a valid value still being typed is applied before the diff
        assert "+gpu_memory_utilization = 0.8" in dialog.diff


async def test_select_and_switch_fields_and_undo_of_a_removed_key(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    shutil.copy(sample_configs_dir() / "sglang_settings.json", target)
    before = target.read_text()
    async with editing(target) as (pilot, screen):
        assert screen.kind == "sglang_json"
        select = screen.query_one("#field-speculative_algorithm Select", Select)
        select.focus()
        select.value = Select.NULL  # "(not set)" removes the key
        await pilot.pause()
        assert screen.document is not None and not screen.document.has(("speculative_algorithm",))
        await press_then_pause(pilot, "ctrl+z")  # undo puts it back in place
        assert screen.document.text == before
        assert select.value == "EAGLE"
        select.value = "NEXTN"
        await pilot.pause()
        assert screen.document.get(("speculative_algorithm",)) == "NEXTN"
        switch_row = screen._rows[("disable_radix_cache",)]
        switch_row.query_one("#value").toggle()
        await pilot.pause()
        assert screen.document.get(("disable_radix_cache",)) is True
        text = screen.document.text
        assert '"speculative_algorithm": "NEXTN",\n' in text and '"disable_radix_cache": true,\n' in text


async def test_file_with_syntax_error_opens_in_raw_view_and_cannot_be_saved(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_bytes(b'[model]\nname = "m"\n\n[speculative]\nnum_speculative_tokens = = 2\n')
    before = broken.read_bytes()
    async with editing(broken) as (pilot, screen):
        assert screen.document is None and screen.syntax_error is not None
        assert screen.query_one(TabbedContent).active == "raw-pane"
        raw = screen.query_one("#raw", TextArea)
        assert raw.cursor_location[0] == 4  # line 5, 0-based
        assert raw.cursor_location[1] == screen.syntax_error.column - 1
        await press_then_pause(pilot, "ctrl+s")
        assert not isinstance(pilot.app.screen, DiffDialog)
        assert "cannot save" in str(screen.query_one("#editor-status", Static).render())
        assert broken.read_bytes() == before
        # Fixing the line in the raw view brings the form back and allows the save.
        raw.focus()
        await pilot.press("i")  # into edit mode
        raw.move_cursor((4, 0))
        raw.action_select_line()
        raw.replace("num_speculative_tokens = 2", raw.selection.start, raw.selection.end)
        await wait_for(pilot, lambda: screen.document is not None and bool(screen._rows), "the form")
        await save_to_the_diff(pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: broken.read_bytes() != before, "the save")
        fixed = b'[model]\nname = "m"\n\n[speculative]\nnum_speculative_tokens = 2\n'
        assert broken.read_bytes() == fixed
        # A syntax error typed in the raw view blocks the save too, from the form: back to the raw view.
        await wait_for_screen(pilot, EditorScreen)
        await pilot.press("f3")
        raw.move_cursor((1, 0))
        await pilot.press("i", *"= [")
        await wait_for(pilot, lambda: screen.document is None, "the syntax error")
        await press_then_pause(pilot, "f2", "ctrl+s")
        assert not isinstance(pilot.app.screen, DiffDialog)
        assert screen.query_one(TabbedContent).active == "raw-pane"
        assert screen.syntax_error is not None and raw.cursor_location[0] == screen.syntax_error.line - 1
        assert broken.read_bytes() == fixed


async def test_lint_and_launch_views(tmp_path: Path) -> None:
    target = tmp_path / "seed.toml"
    shutil.copy(Path(__file__).parents[1] / "configs" / "fixtures" / "seed_config.toml", target)
    async with editing(target) as (pilot, screen):
        assert {finding.id for finding in screen.findings} >= {"removed-key", "gpu-memory-high-with-spec"}
        await pilot.press("f4")
        assert screen.query_one(TabbedContent).active == "lint"
        removed = next(i for i, f in enumerate(screen.findings) if f.id == "removed-key")
        lint_list = screen.query_one("#lint-list", OptionList)
        assert lint_list.highlighted == 0  # f4 highlights the first finding: enter jumps to its line at once
        lint_list.highlighted = removed
        await press_then_pause(pilot, "enter")
        assert screen.query_one(TabbedContent).active == "raw-pane"
        assert screen.query_one("#raw", TextArea).cursor_location[0] == screen.findings[removed].line - 1
        await pilot.press("f5")
        launch = str(screen.query_one("#launch-text", Static).render())
        assert "vllm serve deepseek-ai/DeepSeek-V3" in launch and '"method": "mtp"' in launch
        await pilot.press("c")
        assert pilot.app.clipboard.startswith("vllm serve deepseek-ai/DeepSeek-V3 --dtype bfloat16")
        await pilot.press("y")
        assert "speculative-config:" in str(screen.query_one("#launch-text", Static).render())


async def test_save_and_restart_runs_the_command_and_waits_for_health(config_toml: Path) -> None:
    polls: list[httpx.Request] = []

    def health(request: httpx.Request) -> httpx.Response:
        polls.append(request)
        return httpx.Response(200 if len(polls) >= 2 else 503)

    restart = [sys.executable, "-c", "print('restarting the server'); print('done')"]
    app = EditorApp(config_toml, restart_command=restart, health_url="http://127.0.0.1:9/health")
    await app.http_client.aclose()
    app.http_client = httpx.AsyncClient(transport=httpx.MockTransport(health))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened_editor(pilot)
        await type_into(pilot, field_input(screen, "speculative", "num_speculative_tokens"), "1")
        await press_into(pilot, DiffDialog, "ctrl+r")
        shown = _texts(app.screen)  # the dialogs ctrl+r opens say "save & restart", not "save" / "run"
        assert "Save & restart" in shown and "[y/enter] save & restart" in shown
        await press_into(pilot, ConfirmDialog, "y")
        shown = _texts(app.screen)
        assert "Save & restart: run the restart command?" in shown and "[y] restart" in shown
        await press_into(pilot, RestartDialog, "y")
        dialog = app.screen
        assert isinstance(dialog, RestartDialog)
        await wait_for(pilot, lambda: dialog.finished, "the restart to finish")
        assert "server is back" in str(dialog.query_one("#restart-status", Static).render())
        assert "restarting the server" in "\n".join(dialog.query_one(Log).lines)
        assert len(polls) == 2
        assert "num_speculative_tokens = 1" in config_toml.read_text()
        await press_into(pilot, EditorScreen, "escape")
        await pilot.press("ctrl+s")  # a plain save says save
        await wait_for(pilot, lambda: "no changes" in _texts(app.screen))


def _texts(screen: object) -> str:
    return "\n".join(str(static.render()) for static in screen.query(Static))  # type: ignore[attr-defined]


# A range in words or brackets inside a description says it a second time (the row adds `range_text`).
_RANGE_IN_WORDS = re.compile(r"\d\.\.\d|\bin [\[(]|[\[(]\d[^)\]]*, *\d[^)\]]*[\])]|\(> ?\d")
_CUT = re.compile(r"(?:'s|\b(?:the|a|an|of|to|in|and|or|its|their))$")


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_descriptions_do_not_repeat_the_range_nor_stop_mid_phrase(kind: str) -> None:
    for spec in field_specs(kind):  # type: ignore[arg-type]
        assert spec.path  # a row for every known field
        if spec.range_text:
            assert not _RANGE_IN_WORDS.search(spec.help), (spec.key, spec.help)
        assert not _CUT.search(spec.help.strip()), (spec.key, spec.help)


@pytest.mark.parametrize("sample", ["config.toml", "sglang_settings.json", "client_settings.json"])
async def test_every_help_line_is_shown_whole_at_80_columns(tmp_path: Path, sample: str) -> None:
    target = tmp_path / sample
    shutil.copy(sample_configs_dir() / sample, target)
    async with editing(target) as (pilot, screen):
        await pilot.pause()
        rows = list(screen.query(ConfigFieldRow))
        assert rows
        for row in rows:
            help_line = row.query_one(".field-help", Static)
            expected = row.spec.help + (f"  {row.spec.range_text}" if row.spec.range_text else "")
            lines = [line.text.strip() for line in help_line.render_lines(help_line.region.reset_offset)]
            shown = " ".join(line for line in lines if line)
            assert " ".join(shown.split()) == " ".join(expected.split()), row.spec.key
            assert expected.count(row.spec.range_text or "\0") <= 1
            field = row.query_one("#value")
            if isinstance(field, Input) and row.spec.range_text:  # an unset field: its range once, below
                assert row.spec.range_text not in field.placeholder, row.spec.key


def focused_row(screen: EditorScreen) -> ConfigFieldRow | None:
    return screen._row_of(screen.focused) if screen.focused is not None else None


def marked_rows(screen: EditorScreen) -> list[ConfigFieldRow]:
    return [
        row
        for row in screen._rows.values()
        if str(row.query_one(".field-key", Label).render()).startswith(FOCUS_MARK)
    ]


async def test_arrows_then_a_digit_edit_the_field_the_arrows_reached(config_toml: Path) -> None:
    async with editing(config_toml) as (pilot, screen):
        rows = list(screen._rows)
        assert rows[0] == ("model", "name") and rows[3] == ("model", "max_model_len")
        await press_at_once(pilot, "down", "down", "down", "4", "enter")  # as fast as tmux sends them
        assert screen.document is not None
        await wait_for(pilot, lambda: screen.document.get(rows[3]) == 4, "max_model_len = 4")
        assert screen.document.get(rows[0]) == "deepseek-ai/DeepSeek-V3"
        dialog = await save_to_the_diff(pilot)
        assert "+max_model_len = 4" in dialog.diff and "name =" not in dialog.diff


async def test_the_focused_field_is_marked_named_and_in_view_the_help_says_how_focus_moves_and_pages_move_it(
    config_toml: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On opening, the first field's hint does not replace what was opened (as the snapshots show)."""
    monkeypatch.setenv("NO_COLOR", "1")  # the mark is a shape, not a colour
    async with editing(config_toml) as (pilot, screen):
        form = screen.query_one("#form-fields", VerticalScroll)
        await wait_for(pilot, lambda: marked_rows(screen) == [screen._rows[("model", "name")]], "name marked")
        await wait_for(pilot, lambda: focused_row(screen) is screen._rows[("model", "name")], "its focus")
        await pilot.pause()
        assert status_text(screen).startswith("opened config.toml"), status_text(screen)
        assert "model.name" in status_text(screen)
        rows = {row.text: row.keys for row in key_rows(screen)}  # the help: focus moves, editing starts
        assert set(rows[FIELD_KEYS]) == {"↑", "↓"}
        keys, text = HELP_ROW
        assert set(keys) <= set(rows[text]) and "⏎ applies, esc cancels" in text and "0-9" in keys
        fields = list(screen._rows.values())  # page keys move the focus a page of fields
        await pilot.press("pagedown")
        reached = focused_row(screen)
        assert reached is not None and fields.index(reached) > 1
        await press_at_once(pilot, *["pagedown"] * len(fields))  # the focus never leaves the page in view
        await wait_for(pilot, lambda: focused_row(screen) is fields[-1], "the last field")
        await wait_for(pilot, lambda: form.content_region.contains_region(fields[-1].region), "in view")
        await pilot.press("pageup")
        assert focused_row(screen) not in (fields[-1], None)
        field_input(screen, "model", "name").focus()  # ↓ from the first field
        await pilot.press("down")
        dtype = screen.query_one("#field-model--dtype Select", Select)
        assert screen.focused is dtype and not dtype.expanded  # ↓ moves on; enter opens a choice
        await wait_for(pilot, lambda: not status_text(screen).startswith("opened"), "the field's hint")
        target = ("speculative", "acceptance_threshold")
        row = screen._rows[target]
        await press_at_once(pilot, *["down"] * (list(screen._rows).index(target) - 1))  # at tmux speed
        await wait_for(pilot, lambda: focused_row(screen) is row, "down the form, field after field")
        await wait_for(pilot, lambda: marked_rows(screen) == [row], "only the focused row marked")
        said = f"{dotted(target)}: enter or i edits the field"
        await wait_for(pilot, lambda: status_text(screen).startswith(said), "the status of the focused field")
        in_view = lambda: form.content_region.contains_region(row.region)  # noqa: E731  (with its help line)
        await wait_for(pilot, in_view, "the focused field and its help in view")
        await pilot.press("up")
        above = list(screen._rows.values())[list(screen._rows).index(target) - 1]
        await wait_for(pilot, lambda: marked_rows(screen) == [above], "the mark moved up")
        assert dotted(above.spec.path) in status_text(screen)
