"""The editor never loses unsaved edits: fast raw edits during a form rebuild, any crash, every way out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Input, TextArea

from tui.editor_app import EditorApp
from tui.paths import sample_configs_dir
from tui.screens.editor import EditorScreen
from tui.widgets.config_dialogs import ConfirmDialog
from tui.widgets.config_field import ConfigFieldRow

SIZE = (80, 24)


def recovery_path(path: Path) -> Path:
    """Where the error message says the unsaved edits went (the user-facing contract)."""
    return path.with_name(path.name + ".spectop-recovery")


@pytest.fixture
def config_toml(tmp_path: Path) -> Path:
    target = tmp_path / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    return target


async def opened_editor(pilot) -> EditorScreen:  # type: ignore[no-untyped-def]
    app = pilot.app
    for _ in range(250):
        if isinstance(app.screen, EditorScreen) and app.screen.loaded:
            return app.screen
        await pilot.pause(0.02)
    raise AssertionError("the editor did not open")


def line_of(raw: TextArea, prefix: str) -> int:
    return next(i for i, line in enumerate(raw.text.splitlines()) if line.startswith(prefix))


async def test_typing_then_erasing_in_the_raw_view_while_the_form_rebuilds(config_toml: Path) -> None:
    """Issue 11 item 7: a key typed and erased at once over a key line raised NoMatches('.field-help')."""
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        await pilot.press("f3")
        raw = screen.query_one("#raw", TextArea)
        row = line_of(raw, "num_speculative_tokens")
        raw.move_cursor((row, len(raw.document.get_line(row))))
        raw.insert("x")  # "= 2x" does not parse: the form is being taken down …
        await pilot.pause(0)
        raw.action_delete_left()  # … when the text parses again
        for _ in range(100):
            await pilot.pause(0.02)
            if screen._rows and len(screen.query(ConfigFieldRow)) == len(screen._rows):
                break
        assert app.is_running
        assert screen.document is not None and screen.document.text == config_toml.read_text()
        rows = list(screen.query(ConfigFieldRow))
        assert len(rows) == len(screen._rows)  # one build's rows, none left over
        assert screen._rows[("speculative", "num_speculative_tokens")].pending_text is None


async def test_a_crash_in_the_editor_writes_a_recovery_copy_of_the_unsaved_text(
    config_toml: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tui.screens.editor as editor

    real_lint = editor.lint_document

    def lint_that_breaks(document: object) -> object:
        if "max_num_seqs = 77" in document.text:  # type: ignore[attr-defined]
            raise RuntimeError("lint bug")
        return real_lint(document)  # type: ignore[arg-type]

    monkeypatch.setattr(editor, "lint_document", lint_that_breaks)
    before = config_toml.read_text()
    app = EditorApp(config_toml)
    with pytest.raises(RuntimeError, match="lint bug"):
        async with app.run_test(size=SIZE) as pilot:
            screen = await opened_editor(pilot)
            raw = screen.query_one("#raw", TextArea)
            row = line_of(raw, "max_num_seqs")
            raw.replace("max_num_seqs = 77", (row, 0), (row, len(raw.document.get_line(row))))
            for _ in range(100):
                await pilot.pause(0.02)
    assert config_toml.read_text() == before  # never saved without asking
    recovered = recovery_path(config_toml)
    assert "max_num_seqs = 77" in recovered.read_text()
    assert any(str(recovered) in note for note in getattr(app, "recovery_notes", ()))


async def test_opening_a_file_with_a_recovery_copy_says_so(config_toml: Path) -> None:
    recovery_path(config_toml).write_text("left over", encoding="utf-8")
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        await opened_editor(pilot)
        for _ in range(50):
            if any("spectop-recovery" in n.message for n in app._notifications):
                break
            await pilot.pause(0.02)
        assert any(str(recovery_path(config_toml)) in n.message for n in app._notifications)


async def edit_a_field(pilot, screen: EditorScreen, value: str) -> None:  # type: ignore[no-untyped-def]
    field = screen.query_one("#field-scheduler--max_num_seqs Input", Input)
    field.focus()
    field.value = ""
    await pilot.pause()
    await pilot.press(*value, "enter")
    await pilot.pause()


async def wait_for_screen(pilot, kind: type) -> None:  # type: ignore[no-untyped-def]
    for _ in range(250):
        if isinstance(pilot.app.screen, kind):
            return
        await pilot.pause(0.02)
    raise AssertionError(f"no {kind.__name__}")


async def wait_for_exit(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(250):
        if not pilot.app.is_running:
            return
        await pilot.pause(0.02)
    raise AssertionError("the app did not exit")


async def ask_cancel_ask_answer(pilot, first_key: str, second_key: str, answer: str) -> None:  # type: ignore[no-untyped-def]
    """Quit with `first_key`, cancel the question, quit with `second_key`, answer `answer`; the app ends."""
    await pilot.press(first_key)
    await wait_for_screen(pilot, ConfirmDialog)
    assert "unsaved changes" in pilot.app.screen.question
    await pilot.press("n")  # cancel: still editing
    await wait_for_screen(pilot, EditorScreen)
    assert pilot.app.is_running
    await pilot.press(second_key)
    await wait_for_screen(pilot, ConfirmDialog)
    await pilot.press(answer)
    await wait_for_exit(pilot)


@pytest.mark.parametrize("key", ["ctrl+q", "ctrl+c"])
async def test_quitting_spectop_edit_asks_and_saves(config_toml: Path, key: str) -> None:
    """Issue 11 item 8: ctrl+q quit at once and the edits were lost."""
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        await edit_a_field(pilot, screen, "8")
        await ask_cancel_ask_answer(pilot, key, key, "s")
    assert "max_num_seqs = 8\n" in config_toml.read_text()


async def test_the_quit_action_and_escape_ask_too(config_toml: Path) -> None:
    app = EditorApp(config_toml)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_editor(pilot)
        await edit_a_field(pilot, screen, "8")
        await app.run_action("quit")  # the command palette's "Quit"
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("escape")
        await wait_for_screen(pilot, EditorScreen)
        screen.query_one("#lint-list").focus()
        await pilot.press("escape")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("d")
        await wait_for_exit(pilot)
    assert "max_num_seqs = 64\n" in config_toml.read_text()


async def test_quitting_the_dashboard_with_the_editor_open_asks(config_toml: Path) -> None:
    from tui.app import SpectopApp
    from tui.settings import EndpointSettings, Settings

    endpoint = EndpointSettings(name="sim", url="http://127.0.0.1:9", config_file=config_toml)
    app = SpectopApp(Settings(poll_interval_s=60, endpoints=[endpoint]), remember_theme_choice=False)
    async with app.run_test(size=SIZE) as pilot:
        app.open_editor("sim")
        screen = await opened_editor(pilot)
        await edit_a_field(pilot, screen, "12")
        await ask_cancel_ask_answer(pilot, "ctrl+q", "ctrl+c", "s")
    assert "max_num_seqs = 12\n" in config_toml.read_text()


async def test_ctrl_c_quits_the_dashboard_like_q() -> None:
    from tui.app import SpectopApp
    from tui.settings import Settings

    app = SpectopApp(Settings(poll_interval_s=60), remember_theme_choice=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await wait_for_exit(pilot)
