"""The editor never loses unsaved edits: fast raw edits during a form rebuild, any crash, every way out."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest
from textual.widgets import Input, Static, TextArea
from ui_waiting import (
    editing,
    opened_editor,
    press_into,
    press_then_pause,
    spectop,
    wait_for,
    wait_for_exit,
    wait_for_screen,
)

from tests.telemetry.metrics_test_server import closed_port
from tui.paths import sample_configs_dir
from tui.screens.editor import EditorScreen
from tui.ui.editor_app import EditorApp
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog
from tui.widgets.config_field import ConfigFieldRow

SIZE = (80, 24)
REPO = Path(__file__).resolve().parents[2]


def recovery_path(path: Path) -> Path:  # where the error message says the unsaved edits went
    return path.with_name(path.name + ".spectop-recovery")


def line_of(raw: TextArea, prefix: str) -> int:
    return next(i for i, line in enumerate(raw.text.splitlines()) if line.startswith(prefix))


async def test_typing_then_erasing_in_the_raw_view_while_the_form_rebuilds(config_toml: Path) -> None:
    """A key typed and erased at once over a key line raises nothing (it once raised NoMatches)."""
    async with editing(config_toml) as (pilot, screen):
        await pilot.press("f3", "i")  # the raw view, in edit mode
        raw = screen.query_one("#raw", TextArea)
        row = line_of(raw, "num_speculative_tokens")
        raw.move_cursor((row, len(raw.document.get_line(row))))
        raw.insert("x")  # "= 2x" does not parse: the form is being taken down …
        await pilot.pause(0)
        raw.action_delete_left()  # … when the text parses again
        await pilot.pause()  # both edits handled (the pilot.app idle), then the rebuild they started finishes
        built = lambda: len(screen.query(ConfigFieldRow)) == len(screen._rows)  # noqa: E731  (none left over)
        await wait_for(
            pilot, lambda: screen.document is not None and bool(screen._rows) and built(), "a build"
        )
        assert pilot.app.is_running and built()
        assert screen.document is not None and screen.document.text == config_toml.read_text()
        assert screen._rows[("speculative", "num_speculative_tokens")].pending_text is None


def _lint_that_breaks(document: object) -> object:
    import tui.configs.lint

    if "max_num_seqs = 77" in document.text:  # type: ignore[attr-defined]
        raise RuntimeError("lint bug")
    return tui.configs.lint.lint_document(document)  # type: ignore[arg-type]


def _message_that_breaks(error: object) -> str:
    raise RuntimeError("status bug")


@pytest.mark.parametrize(
    ("name", "broken", "line"),
    [
        ("lint_document", _lint_that_breaks, "max_num_seqs = 77"),
        # the unparsable text, not the last good document
        ("syntax_message", _message_that_breaks, "max_num_seqs = = 77"),
    ],
    ids=["a-lint-bug", "while-the-text-does-not-parse"],
)
async def test_a_crash_in_the_editor_writes_a_recovery_copy_of_the_unsaved_text(
    config_toml: Path, monkeypatch: pytest.MonkeyPatch, name: str, broken: object, line: str
) -> None:
    monkeypatch.setattr(f"tui.screens.editor_form.{name}", broken)
    before = config_toml.read_text()
    app = EditorApp(config_toml)
    with pytest.raises(RuntimeError, match="bug"):
        async with app.run_test(size=SIZE) as pilot:
            screen = await opened_editor(pilot)
            raw = screen.query_one("#raw", TextArea)
            row = line_of(raw, "max_num_seqs")
            raw.replace(line, (row, 0), (row, len(raw.document.get_line(row))))
            await wait_for_exit(pilot)  # the bug ends the app
    assert config_toml.read_text() == before  # never saved without asking
    recovered = recovery_path(config_toml)
    assert line in recovered.read_text()
    assert any(str(recovered) in note for note in app.recovery_notes)


async def edit_a_field(pilot, screen: EditorScreen, value: str) -> None:  # type: ignore[no-untyped-def]
    field = screen.query_one("#field-scheduler--max_num_seqs Input", Input)
    field.focus()
    field.value = ""
    await pilot.pause()
    await pilot.press("i", *value, "enter")  # i: into edit mode
    await wait_for(pilot, screen.has_unsaved_changes, "the edit")  # a busy host: the keys may land later


async def ask_cancel_ask_answer(pilot, first_key: str, second_key: str, answer: str) -> None:  # type: ignore[no-untyped-def]
    await press_into(pilot, ConfirmDialog, first_key)
    assert "unsaved changes" in pilot.app.screen.question
    await press_into(pilot, EditorScreen, "n")  # cancel: still editing
    assert pilot.app.is_running
    await press_into(pilot, ConfirmDialog, second_key)
    await pilot.press(answer)
    await wait_for_exit(pilot)


@pytest.mark.parametrize("key", ["ctrl+q", "ctrl+c"])
async def test_quitting_spectop_edit_asks_and_saves(config_toml: Path, key: str) -> None:
    async with editing(config_toml) as (pilot, screen):
        await edit_a_field(pilot, screen, "8")
        await ask_cancel_ask_answer(pilot, key, key, "s")
    assert "max_num_seqs = 8\n" in config_toml.read_text()


async def test_a_recovery_copy_is_said_on_opening_the_quit_action_and_escape_ask_too_and_d_discards(
    config_toml: Path,
) -> None:
    recovery_path(config_toml).write_text("left over", encoding="utf-8")
    async with editing(config_toml) as (pilot, screen):
        await wait_for(pilot, lambda: any("spectop-recovery" in n.message for n in pilot.app._notifications))
        assert any(str(recovery_path(config_toml)) in n.message for n in pilot.app._notifications)
        await edit_a_field(pilot, screen, "8")
        await pilot.app.run_action("quit")  # the command palette's "Quit"
        await wait_for_screen(pilot, ConfirmDialog)
        await press_into(pilot, EditorScreen, "escape")
        screen.query_one("#raw", TextArea).focus()
        await press_into(pilot, ConfirmDialog, "i", "escape", "escape")  # into the raw text, out, close
        await pilot.press("d")
        await wait_for_exit(pilot)
    assert "max_num_seqs = 64\n" in config_toml.read_text()


async def test_quitting_the_dashboard_with_the_editor_open_asks(config_toml: Path) -> None:
    from tui.settings import EndpointSettings

    app = spectop(EndpointSettings(name="sim", url="http://127.0.0.1:9", config_file=config_toml))
    async with app.run_test(size=SIZE) as pilot:
        app.open_editor("sim")
        screen = await opened_editor(pilot)
        await edit_a_field(pilot, screen, "12")
        await ask_cancel_ask_answer(pilot, "ctrl+q", "ctrl+c", "s")
    assert "max_num_seqs = 12\n" in config_toml.read_text()


def oom_log(tmp_path: Path) -> Path:
    """A real `spectop sim` start-up OOM (k=16 needs more than 1 - gpu_memory_utilization)."""
    config = tmp_path / "k16.toml"
    text = (sample_configs_dir() / "config.toml").read_text(encoding="utf-8")
    config.write_text(text.replace("num_speculative_tokens = 2", "num_speculative_tokens = 16"), "utf-8")
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "tui", "sim", "--flavor", "vllm", "--port", "0"]
    command += ["--config", str(config), "--log-file", str(log)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 1, result.stderr
    return log


async def test_the_health_wait_times_out_and_shows_the_logs_last_errors(
    config_toml: Path, tmp_path: Path
) -> None:
    assert RestartDialog(["true"], None, None).health_timeout_s <= 60  # never minutes by default
    crash = oom_log(tmp_path)
    log = tmp_path / "endpoint.log"
    log.write_text("ERROR 12-01 08:00:00 [api_server.py:1] an old error, before the restart\n", "utf-8")
    # The restart "succeeds" and the server then dies with a CUDA OOM in its log.
    copy = f"import shutil; shutil.copyfileobj(open({str(crash)!r}), open({str(log)!r}, 'a'))"
    restart = [sys.executable, "-c", copy]
    url = f"http://127.0.0.1:{closed_port()}/health"
    options = {"restart_command": restart, "health_url": url, "log_file": log, "health_timeout_s": 0.5}
    async with editing(config_toml, size=(100, 30), **options) as (pilot, screen):
        await edit_a_field(pilot, screen, "8")
        await press_into(pilot, DiffDialog, "ctrl+r")
        await press_into(pilot, ConfirmDialog, "y")
        await press_into(pilot, RestartDialog, "y")
        dialog = pilot.app.screen
        assert isinstance(dialog, RestartDialog)
        await wait_for(pilot, lambda: dialog.finished, "the restart to finish")
        status = str(dialog.query_one("#restart-status", Static).render())
        assert "did not answer" in status and "within 0.5 s" in status
        assert f"last errors in {log}" in status
        assert "torch.OutOfMemoryError: CUDA out of memory" in status
        assert "an old error" not in status


async def test_a_screen_that_uses_ctrl_c_keeps_it() -> None:
    """The bench screen cancels a burst with ctrl+c: the app's ctrl+c-quits must not take that away."""
    from textual.binding import Binding, BindingType
    from textual.screen import Screen

    class Cancellable(Screen[None]):
        BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+c", "cancel", "Cancel", priority=True)]
        cancelled = 0

        def action_cancel(self) -> None:
            self.cancelled += 1

    app = spectop()
    async with app.run_test(size=SIZE) as pilot:
        screen = Cancellable()
        await app.push_screen(screen)
        await press_then_pause(pilot, "ctrl+c")
        assert screen.cancelled == 1 and app.is_running
        app.pop_screen()
        await pilot.pause()
        await pilot.press("ctrl+c")
        await wait_for_exit(pilot)


_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from textual.widgets import TextArea
    from tui.ui.editor_app import EditorApp

    def styles_of(raw: TextArea) -> set[str]:
        return {str(segment.style) for segment in raw.render_line(1) if segment.text.strip()}

    async def until(pilot, condition) -> None:  # the hang guard is 60 s: a busy machine is slow
        for _ in range(1200):
            if condition():
                return
            await pilot.pause(0.05)

    async def main() -> None:
        app = EditorApp(Path(sys.argv[1]))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: getattr(app.screen, "loaded", False))
            await pilot.press("f3")
            raw = app.screen.query_one("#raw", TextArea)
            await until(pilot, lambda: raw.has_focus and len(styles_of(raw)) >= 2)  # shown, highlighted
            print("RENDERED", raw.language, len(raw.text), len(styles_of(raw)))

    asyncio.run(main())
    """
)


def test_json_file_opens_and_renders_with_highlighting(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    shutil.copy(sample_configs_dir() / "sglang_settings.json", target)
    command = [sys.executable, "-c", _SCRIPT, str(target)]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RENDERED"))
    _, language, length, styles = line.split()
    assert language == "json"
    assert int(length) == len(target.read_text())
    assert int(styles) >= 2  # key and value highlighted differently
