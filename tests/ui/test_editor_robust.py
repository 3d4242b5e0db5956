"""The editor never loses unsaved edits: fast raw edits during a form rebuild, any crash, every way out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import TextArea

from tui.editor_app import EditorApp
from tui.paths import sample_configs_dir
from tui.screens.editor import EditorScreen
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
