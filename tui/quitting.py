"""Every way out of a spectop app asks first when a screen holds unsaved work (the config editor).

ctrl+q, ctrl+c (which quits, like in htop or k9s) and the palette's quit all run `action_quit`;
a screen with `ask_before_quitting()` that returns True has taken over: it asks (save / discard /
cancel) and exits the app itself when the user agrees.
"""

from __future__ import annotations

from textual.binding import Binding

QUIT_BINDINGS = [
    Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
]


class AsksBeforeQuitting:
    """Mixin for a Textual App; add QUIT_BINDINGS to its BINDINGS (Textual reads those per class)."""

    async def action_quit(self) -> None:
        for screen in reversed(self.screen_stack):  # type: ignore[attr-defined]
            ask = getattr(screen, "ask_before_quitting", None)
            if ask is not None and ask():
                return
        self.exit()  # type: ignore[attr-defined]
