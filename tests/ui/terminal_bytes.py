"""What a screen writes to the terminal, read back to check that text from a server or a file is drawn made
harmless: the frame as the bytes Textual would send, the characters drawn in one widget, and an app that
shows one screen."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from ui_waiting import wait_for

# What the data would put on the terminal; Textual's own output is CSI colour / cursor codes only.
FROM_THE_DATA = ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\u202e", "PWNED", "aGVsbG8=")
# The control characters alone: the editor shows a file's text as it is (PWNED is text there).
CONTROLS = tuple(raw for raw in FROM_THE_DATA if not raw.isprintable())


def terminal_output(app: App[Any]) -> str:
    """The full frame exactly as the app would write it to the terminal (what `_display` sends)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", legacy_windows=False, safe_box=False)  # fmt: skip
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return update.render_segments(console)


def region_text(app: App[Any], widget: Widget) -> str:
    """The characters drawn in `widget`'s region of the screen (segment text, controls and all)."""
    strips = app.screen._compositor.render_strips()
    region = widget.region
    lines = strips[region.y : region.bottom]
    return "\n".join("".join(s.text for s in line.crop(region.x, region.right)) for line in lines)


def assert_clean(*texts: str, raw: tuple[str, ...] = FROM_THE_DATA) -> None:
    for text in texts:
        for each in raw:
            assert each not in text, (each, text)


async def assert_nothing_injected(
    pilot: Pilot[Any], widget: Widget, shown: str, raw: tuple[str, ...] = FROM_THE_DATA
) -> None:
    """Once `shown` (or anything raw) is drawn in `widget`: the text is there and nothing raw anywhere."""
    app = pilot.app

    def flat(drawn: str) -> str:  # a wrapped text (an alert row) read as one line; spaces only
        return re.sub(r" *\n *", " ", drawn)

    def settled() -> bool:
        drawn = region_text(app, widget)
        return shown in flat(drawn) or any(each in drawn for each in raw)

    await wait_for(pilot, settled, timeout_s=10.0)
    drawn = region_text(app, widget)
    assert shown in flat(drawn)  # the hostile text was drawn there, made harmless
    assert_clean(drawn, terminal_output(app), raw=raw)


class OneScreenApp(App[None]):
    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)
