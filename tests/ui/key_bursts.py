"""Keys sent as a terminal sends them when they arrive together (tmux send-keys, a paste, a fast typist).

`Pilot.press` lets the app go idle after every key, so each key is handled before the next is sent: it
cannot show a key handled out of order. `press_at_once` queues every key before the app handles the
first, as a burst read from the terminal is; then waits until the app is idle.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.pilot import Pilot

# The characters a terminal sends for these keys (None: an escape sequence, no character).
CHARACTERS = {"backspace": "\x7f", "enter": "\r", "escape": "\x1b", "tab": "\t"}


async def press_at_once(pilot: Pilot[Any], *keys: str) -> None:
    """Queue `keys` (Textual's names; " " is the space bar) on the app at once; wait on what they do."""
    for key in keys:
        name = "space" if key == " " else key
        pilot.app.post_message(events.Key(name, key if len(key) == 1 else CHARACTERS.get(key)))
    await pilot.pause()
