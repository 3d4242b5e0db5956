"""Help generated from each screen's bindings, fitting 80x24; the footers at 80 columns; F4 enter."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey
from ui_waiting import Replayed, opened_editor, press_into, press_then_pause, wait_for, wait_for_dashboard

from tui.advice.guard_control import GuardOffer
from tui.screens.alerts import AlertsScreen
from tui.screens.bench import BenchScreen
from tui.screens.dashboard import DashboardScreen
from tui.screens.detail import DetailScreen
from tui.screens.guard import GuardDialog
from tui.screens.help import CLOSE_HINT, HelpScreen, declared_bindings, key_rows
from tui.screens.tune import TuneScreen
from tui.ui.app import SpectopApp
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog

SIZE = (80, 24)


def _check_help(app: App[object], help_screen: HelpScreen, fits: bool = True) -> set[str]:
    listed = {key for row in help_screen.rows for key in row.keys}
    bindings = help_screen.shown_for.active_bindings.values()  # as the footer shows them
    missing = {app.get_key_display(active.binding) for active in bindings if active.binding.show} - listed
    assert not missing, f"{type(help_screen.shown_for).__name__}: {missing} not in its help"
    frame = help_screen.query_one(VerticalScroll)
    assert frame.max_scroll_y == 0 or not fits, "the help needs scrolling at 80x24"
    assert frame.region.bottom <= SIZE[1] and frame.border_subtitle == CLOSE_HINT  # in sight, in the frame
    return listed


async def test_each_dashboard_screen_has_its_own_help(replayed: Replayed) -> None:
    async with replayed(SIZE) as (pilot, app):
        seen: dict[type, set[str]] = {}
        for opener, screen_type in (("", DashboardScreen), ("enter", DetailScreen), ("a", AlertsScreen)):
            if opener:
                await press_into(pilot, screen_type, opener)
            shown_for = app.screen
            await press_into(pilot, HelpScreen, "question_mark" if opener != "a" else "f1")
            await pilot.pause()
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen) and help_screen.shown_for is shown_for
            seen[screen_type] = _check_help(app, help_screen)
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
            if screen_type is DetailScreen:
                await pilot.press("escape")
        assert {"1", "2", "3", "w", "f"} <= seen[DetailScreen] and "w" not in seen[DashboardScreen]
        assert "h" in seen[DetailScreen]  # the log pane's access lines, in the footer and in the help
        assert "+/-" in seen[DashboardScreen]  # a replay: the speed keys, and no bench
        assert "b" not in seen[DashboardScreen]


def _footer_keys(app: App[object]) -> dict[str, FooterKey]:
    return {key.key_display: key for key in app.screen.query(FooterKey)}


def _merged_by_textual(node: DOMNode) -> list[tuple[str, str]]:
    """What Textual itself holds (private: this test alone reads it, to notice when Textual changes)."""
    return [(b.key, b.action) for bindings in node._bindings.key_to_bindings.values() for b in bindings]


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


async def check_screen(
    pilot: Pilot[Any], where: str, seen: dict[str, list[str]], *, fits: bool = False
) -> set[str]:
    """Its help (no key with two meanings, nothing cut, every footer key, no scrolling), the bindings as
    Textual merged them, and a footer whose right edge is the palette key."""
    app = pilot.app
    screen = app.screen
    seen[where] = conflicts(screen)
    if screen.query(Footer):  # a full screen, not a dialog
        active = list(screen.active_bindings.values())
        for node in (screen, app):
            public = [(b.key, b.action) for b in declared_bindings(node, active)]
            assert public == _merged_by_textual(node), (where, type(node).__name__)
        await wait_for(pilot, lambda: "^p" in _footer_keys(app) and _footer_keys(app)["^p"].region.width > 0)
        await pilot.pause()
        assert _footer_keys(app)["^p"].region.right == SIZE[0], where
        bottom = screen._compositor.render_strips()[-1].text
        assert bottom.rstrip().endswith("^p palette"), (where, bottom)  # not "^p paletteh"
    help_screen = HelpScreen(screen)
    await app.push_screen(help_screen)
    await pilot.pause()
    drawn = "\n".join(str(static.render()) for static in help_screen.query(Static))
    assert "…" not in drawn, f"{where}: a description is cut"
    listed = _check_help(app, help_screen, fits)
    help_screen.dismiss()
    await wait_for(pilot, lambda: app.screen is screen)
    return listed


def _in_sight(app: App[object], *shown: str) -> bool:
    keys = _footer_keys(app)
    return all(keys[key].region.width > 0 and keys[key].region.right <= keys["^p"].region.x for key in shown)


def _dialogs(long: bool = False) -> tuple[Screen[Any], ...]:
    """The dialogs that list their keys; `long`: with a question and a diff that fill the screen."""
    question = "Close the editor?" + ("\n" + "line\n" * 12 if long else "")
    return (
        ConfirmDialog(question, {"s": "save", "d": "discard", "n": ""}),
        DiffDialog("Save config.toml?", "-a = 1\n+a = 2\n" * (20 if long else 1)),
        GuardDialog.of(
            GuardOffer("e", None, "acceptance 28% below 50% for 30 s", "-enabled = true\n+enabled = false\n")
        ),
    )


async def test_each_screens_help_footer_and_bindings_agree(live_app: SpectopApp) -> None:
    app = live_app
    seen: dict[str, list[str]] = {}
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_dashboard(pilot)
        await check_screen(pilot, "dashboard", seen, fits=True)
        assert _in_sight(app, "⏎", "/", "e", "q", "?", "b")
        await press_then_pause(pilot, "v")
        await check_screen(pilot, "dashboard table", seen)
        await press_into(pilot, DetailScreen, "v", "enter")
        await check_screen(pilot, "detail", seen)
        await pilot.press("tab")
        await check_screen(pilot, "detail, next focus", seen)
        await press_into(pilot, DashboardScreen, "escape")
        await press_into(pilot, AlertsScreen, "a")
        await check_screen(pilot, "alerts", seen)
        # `a` says what it does here: back (the alerts screen), not the dashboard's "alerts"
        assert {row.text for row in key_rows(app.screen) if "a" in row.keys} == {"back to the screen before"}
        await press_into(pilot, DashboardScreen, "escape")
        await pilot.press("e")
        await opened_editor(pilot)
        for tab in ("f2", "f3", "f4", "f5"):
            await press_then_pause(pilot, tab)
            listed = await check_screen(pilot, f"editor {tab}", seen, fits=tab == "f2")
            assert {"f4", "f5", "^s", "^r"} <= listed
            assert _in_sight(app, "f4", "f5")  # with ^r save & restart
        await press_into(pilot, DashboardScreen, "f2", "escape")
        await press_into(pilot, BenchScreen, "b")
        assert "^r" in await check_screen(pilot, "bench", seen, fits=True)  # start a burst
        await press_then_pause(pilot, "h")
        await check_screen(pilot, "bench history", seen)
        await press_into(pilot, DashboardScreen, "escape")
        await press_into(pilot, TuneScreen, "T")
        await check_screen(pilot, "tune", seen)
        assert not any("alerts" in row.text for row in key_rows(app.screen) if "a" in row.keys)
        for dialog in _dialogs():
            await app.push_screen(dialog)
            await pilot.pause()
            await check_screen(pilot, type(dialog).__name__, seen)
            dialog.dismiss(None)  # type: ignore[arg-type]
            await pilot.pause()
    assert not {where: found for where, found in seen.items() if found}


async def test_a_toast_never_covers_a_dialogs_keys(live_app: SpectopApp) -> None:
    app = live_app
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        for dialog in _dialogs(long=True):
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
