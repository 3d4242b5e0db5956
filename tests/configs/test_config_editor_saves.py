"""The editor's ctrl+s goes through the same save as `spectop config set`: link, owner and errors alike."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from tui.configs import atomic
from tui.paths import sample_configs_dir
from tui.screens.editor import EditorScreen
from tui.ui.editor_app import EditorApp
from tui.widgets.config_dialogs import DiffDialog

sys.path.insert(0, str(Path(__file__).parents[1] / "ui"))
from ui_waiting import wait_for

NOBODY = 65534
SIZE = (100, 30)


def _status(screen: EditorScreen) -> str:
    return str(screen.query_one("#editor-status", Static).render())


async def _change_and_save(pilot: Pilot[object], tokens: str) -> EditorScreen:
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen.loaded)
    screen = app.screen
    assert isinstance(screen, EditorScreen)
    field = screen.query_one("#field-speculative--num_speculative_tokens Input", Input)
    field.focus()
    field.value = ""
    await pilot.pause()
    await pilot.press("i", *tokens, "enter")  # i: into edit mode
    screen.set_status("")  # the wait below is for this save's message
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: isinstance(app.screen, DiffDialog))
    await pilot.press("y")
    await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and "sav" in _status(screen))
    return screen


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
async def test_editor_save_keeps_the_symlink_and_the_owner_or_says_it_could_not(
    tmp_path: Path, monkeypatch
) -> None:
    target = tmp_path / "etc" / "config.toml"
    target.parent.mkdir()
    shutil.copy(sample_configs_dir() / "config.toml", target)
    os.chown(target, NOBODY, NOBODY)
    target.chmod(0o640)
    link = tmp_path / "config.toml"
    link.symlink_to(target)

    def not_permitted(fd: int, uid: int, gid: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    app = EditorApp(link)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _change_and_save(pilot, "3")
        assert _status(screen).startswith("saved")
        assert link.is_symlink() and "num_speculative_tokens = 3" in target.read_text()
        info = target.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o640)
        monkeypatch.setattr(atomic.os, "fchown", not_permitted)
        await _change_and_save(pilot, "4")
        assert "owner nobody:nogroup not kept" in _status(screen)
    assert "num_speculative_tokens = 4" in target.read_text()


def _is_temp(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp")
    except OSError:
        return False


async def test_editor_reports_a_full_disk_and_a_read_only_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    before = target.read_bytes()
    real_fsync = os.fsync

    def full_for_temps(fd: int) -> None:
        if _is_temp(fd):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", full_for_temps)
    app = EditorApp(target)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _change_and_save(pilot, "3")
        assert "not saved" in _status(screen) and "no space left" in _status(screen)
        assert target.read_bytes() == before
        assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]
        monkeypatch.setattr(atomic.os, "fsync", real_fsync)
        target.chmod(0o444)
        await _change_and_save(pilot, "4")
        assert "not saved" in _status(screen) and "read-only" in _status(screen)
        assert isinstance(app.screen, EditorScreen)  # a message, not a crash
    assert target.read_bytes() == before
