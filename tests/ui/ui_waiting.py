"""The one way tests wait: on a condition, never a fixed time (`timeout_s` is a hang guard)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App
from textual.pilot import Pilot

if TYPE_CHECKING:
    from tui.screens.editor import EditorScreen
    from tui.settings import EndpointSettings
    from tui.ui.app import SpectopApp

# The `replayed` fixture's (conftest.py): `async with replayed(size, **options) as (pilot, app)`.
Replayed = Callable[..., AbstractAsyncContextManager[tuple[Pilot[Any], "SpectopApp"]]]
STEP_S = 0.05
HANG_GUARD_S = 60.0
# The characters a terminal sends for these keys (None: an escape sequence, no character).
CHARACTERS = {"backspace": "\x7f", "enter": "\r", "escape": "\x1b", "tab": "\t"}


async def wait_for(
    pilot: Pilot[Any],
    condition: Callable[[], bool],
    what: str = "the condition",
    *,
    timeout_s: float = HANG_GUARD_S,
    explain: Callable[[], str] | None = None,
) -> None:
    """Let the app run until `condition()` holds."""
    for _ in range(max(1, int(max(timeout_s, HANG_GUARD_S) / STEP_S))):
        if condition():
            return
        await pilot.pause(STEP_S)
    if condition():
        return
    raise AssertionError(f"timed out waiting for {what}" + (f": {explain()}" if explain else ""))


async def wait_until_still(pilot: Pilot[Any], frames: int = 3) -> None:
    """Let the app run until what it draws stays the same for `frames` pauses in a row: a layout that
    settles in two passes (a card sized, then its charts drawn to that size) is only then a snapshot."""
    still, last = 0, None
    for _ in range(int(HANG_GUARD_S / STEP_S)):
        screen = pilot.app.export_screenshot()
        still = still + 1 if screen == last else 0
        if still >= frames:
            return
        last = screen
        await pilot.pause(STEP_S)
    raise AssertionError("the screen never stopped changing")


async def wait_for_screen(pilot: Pilot[Any], kind: type) -> None:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, kind), f"the {kind.__name__}")


async def opened_editor(pilot: Pilot[Any]) -> EditorScreen:
    """The config editor, once its file is loaded."""
    from tui.screens.editor import EditorScreen  # here: tests of the first frame import this module

    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen.loaded, "the editor")
    assert isinstance(app.screen, EditorScreen)
    return app.screen


@asynccontextmanager
async def editing(
    path: Path, *, size: tuple[int, int] = (80, 24), **options: Any
) -> AsyncIterator[tuple[Pilot[Any], EditorScreen]]:
    """`spectop edit path` (EditorApp's `options`) in a headless terminal, once the file is loaded."""
    from tui.ui.editor_app import EditorApp  # here: tests of the first frame import this module

    async with EditorApp(path, **options).run_test(size=size) as pilot:
        yield pilot, await opened_editor(pilot)


def spectop(
    *endpoints: EndpointSettings,
    poll_interval_s: float = 60.0,
    settings: dict[str, Any] | None = None,
    **options: Any,
) -> SpectopApp:
    """The dashboard on `endpoints` (and other `settings`) with the project's themes, remembering nothing."""
    from tui.paths import themes_dir  # here: tests of the first frame import this module
    from tui.settings import Settings
    from tui.ui.app import SpectopApp

    options = {"theme_folders": [themes_dir()], "remember_theme_choice": False, **options}
    fields = {"poll_interval_s": poll_interval_s, "endpoints": list(endpoints), **(settings or {})}
    return SpectopApp(Settings(**fields), **options)


def polling_fast(endpoint: EndpointSettings, **options: Any) -> SpectopApp:
    from tui.settings import AlertSettings  # the dashboard on `endpoint`, polled four times a second

    fast = {"window_s": 1.0, "alerts": AlertSettings(sustained_s=0.5)}  # an alert after half a second
    return spectop(endpoint, poll_interval_s=0.25, settings=fast, **options)


async def wait_for_dashboard(pilot: Pilot[Any]) -> None:
    """The dashboard, with its cards made."""
    from tui.screens.dashboard import DashboardScreen

    app = pilot.app
    await wait_for(
        pilot, lambda: isinstance(app.screen, DashboardScreen) and bool(app.screen.query("EndpointCard"))
    )


def card_texts(app: App[Any]) -> dict[str, str]:
    """What each card on the screen shows, by its endpoint."""
    return {card.endpoint: card.render().plain for card in app.screen.query("EndpointCard")}  # type: ignore[attr-defined]


async def wait_for_exit(pilot: Pilot[Any]) -> None:
    await wait_for(pilot, lambda: not pilot.app.is_running, "the app to exit")


async def wait_until_tailed(pilot: Pilot[Any], log: Path, lines_shown: Callable[[], int]) -> int:
    """The tailer starts at the end of the file: append a marker line until one is shown, so what the
    test writes next is surely read. Returns how many lines are shown then."""
    for _ in range(int(HANG_GUARD_S)):
        with log.open("a", encoding="utf-8") as handle:
            handle.write("spectop test: is the tailer reading?\n")
        for _ in range(int(1 / STEP_S)):
            if lines_shown():
                return lines_shown()
            await pilot.pause(STEP_S)
    raise AssertionError(f"the tailer never read {log}")


async def press_at_once(pilot: Pilot[Any], *keys: str) -> None:
    """Queue `keys` (" " is the space bar) before the app handles the first, as a burst read from the
    terminal is (`Pilot.press` lets the app go idle after each key); wait on what they do."""
    for key in keys:
        name = "space" if key == " " else key
        pilot.app.post_message(events.Key(name, key if len(key) == 1 else CHARACTERS.get(key)))
    await pilot.pause()


async def press_then_pause(pilot: Pilot[Any], *keys: str) -> None:
    """Press `keys`, then let the app go idle and redraw (what the keys started is drawn)."""
    await pilot.press(*keys)
    await pilot.pause()


async def press_into(pilot: Pilot[Any], kind: type, *keys: str) -> None:
    """Press `keys`, then wait for the screen `kind`."""
    await pilot.press(*keys)
    await wait_for_screen(pilot, kind)
