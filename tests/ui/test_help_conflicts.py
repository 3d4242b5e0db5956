"""No help lists a key twice with two meanings, descriptions are whole, and a toast
never covers a dialog's keys.

Every screen is opened in a live app (and the dialogs pushed on it), with each focus that brings keys
of its own (the bench's history, the editor's tabs, the table view), and its help rows are checked.
"""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Static
from ui_waiting import wait_for, wait_for_dashboard

from tui.screens.dashboard import DashboardScreen
from tui.screens.guard import GuardDialog
from tui.screens.help import HelpScreen, key_rows
from tui.ui.app import SpectopApp
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog

SIZE = (80, 24)


def conflicts(screen: Screen[Any]) -> list[str]:
    """Keys listed in two rows of the screen's help, with both meanings."""
    meaning: dict[str, str] = {}
    found = []
    for row in key_rows(screen):
        for key in row.keys:
            if key in meaning and meaning[key] != row.text:
                found.append(f"{key}: {meaning[key]!r} / {row.text!r}")
            meaning.setdefault(key, row.text)
    return found


async def check_help(pilot: Pilot[Any], where: str, seen: dict[str, list[str]]) -> None:
    """The help of the screen in view: no conflicts, nothing cut."""
    app = pilot.app
    screen = app.screen
    seen[where] = conflicts(screen)
    help_screen = HelpScreen(screen)
    await app.push_screen(help_screen)
    await pilot.pause()
    drawn = "\n".join(str(static.render()) for static in help_screen.query(Static))
    assert "…" not in drawn, f"{where}: a description is cut"
    help_screen.dismiss()
    await wait_for(pilot, lambda: app.screen is screen)


async def test_no_screen_lists_a_key_with_two_meanings(live_app: SpectopApp) -> None:
    app = live_app
    seen: dict[str, list[str]] = {}
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_dashboard(pilot)
        await check_help(pilot, "dashboard", seen)
        await pilot.press("v")
        await pilot.pause()
        await check_help(pilot, "dashboard table", seen)
        await pilot.press("v", "enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "DetailScreen")
        await check_help(pilot, "detail", seen)
        await pilot.press("tab")
        await check_help(pilot, "detail, next focus", seen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "AlertsScreen")
        await check_help(pilot, "alerts", seen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await pilot.press("e")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded)  # type: ignore[attr-defined]
        for tab in ("f2", "f3", "f4", "f5"):
            await pilot.press(tab)
            await pilot.pause()
            await check_help(pilot, f"editor {tab}", seen)
        await pilot.press("f2", "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await pilot.press("b")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "BenchScreen")
        await check_help(pilot, "bench", seen)
        await pilot.press("h")
        await pilot.pause()
        await check_help(pilot, "bench history", seen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await pilot.press("T")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TuneScreen")
        await check_help(pilot, "tune", seen)
        for dialog in (
            ConfirmDialog("Close the editor?", {"s": "save", "d": "discard", "n": ""}),
            DiffDialog("Save config.toml?", "-a = 1\n+a = 2\n"),
            GuardDialog.offering(
                "e", "acceptance 28% below 50% for 30 s", "-enabled = true\n+enabled = false\n"
            ),
        ):
            await app.push_screen(dialog)
            await pilot.pause()
            await check_help(pilot, type(dialog).__name__, seen)
            dialog.dismiss(None)  # type: ignore[arg-type]
            await pilot.pause()
    assert not {where: found for where, found in seen.items() if found}


async def test_the_alerts_and_tune_screens_say_what_a_does_there(live_app: SpectopApp) -> None:
    app = live_app
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_dashboard(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "AlertsScreen")
        texts = {row.text for row in key_rows(app.screen) if "a" in row.keys}
        assert texts == {"back to the screen before"}
        await pilot.press("escape", "T")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TuneScreen")
        assert not any("alerts" in row.text for row in key_rows(app.screen) if "a" in row.keys)


async def test_a_toast_never_covers_a_dialogs_keys(live_app: SpectopApp) -> None:
    app = live_app
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        for dialog in (
            ConfirmDialog("Close the editor?\n" + "line\n" * 12, {"s": "save", "d": "discard", "n": ""}),
            DiffDialog("Save config.toml?", "-a = 1\n+a = 2\n" * 20),
            GuardDialog.offering(
                "e", "acceptance 28% below 50% for 30 s", "-enabled = true\n+enabled = false\n"
            ),
        ):
            await app.push_screen(dialog)
            for index in range(3):
                app.notify(f"a long notification number {index} " * 3, timeout=30)
            await wait_for(pilot, lambda: bool(dialog.query("Toast")))  # noqa: B023
            await pilot.pause()
            toasts = [toast.region for toast in dialog.query("Toast") if toast.region.area]  # shown ones
            keys = [static.region for static in dialog.query(".keys")]
            assert toasts and keys, type(dialog).__name__
            assert not any(t.overlaps(k) for t in toasts for k in keys), type(dialog).__name__
            app.clear_notifications()
            dialog.dismiss(None)  # type: ignore[arg-type]
            await pilot.pause()
