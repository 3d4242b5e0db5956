"""Every way out of a spectop app asks first when a screen holds unsaved work (the config editor).

ctrl+q, ctrl+c (which quits, like in htop or k9s, unless the screen uses it: the bench cancels a
burst with it) and the palette's quit all run `action_quit`;
a screen with `ask_before_quitting()` that returns True has taken over: it asks (save / discard /
cancel) and exits the app itself when the user agrees.
"""

from __future__ import annotations

from textual.binding import Binding

QUIT_BINDINGS = [
    Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True),
]
# Every Screen binds ctrl+c to copying a mouse selection; that one does not keep ctrl+c from quitting.
_DEFAULT_CTRL_C_ACTIONS = frozenset({"screen.copy_text", "copy_text"})


class AsksBeforeQuitting:
    """Mixin for a Textual App; add QUIT_BINDINGS to its BINDINGS (Textual reads those per class)."""

    async def action_interrupt(self) -> None:
        """ctrl+c: a screen's own use of it comes first (the bench cancels a burst); otherwise quit."""
        screen = self.screen  # type: ignore[attr-defined]
        for binding in screen._bindings.key_to_bindings.get("ctrl+c", ()):
            if binding.action not in _DEFAULT_CTRL_C_ACTIONS:
                await self.run_action(binding.action, screen)  # type: ignore[attr-defined]
                return
        await self.action_quit()

    async def action_quit(self) -> None:
        for screen in reversed(self.screen_stack):  # type: ignore[attr-defined]
            ask = getattr(screen, "ask_before_quitting", None)
            if ask is not None and ask():
                return
        self.exit()  # type: ignore[attr-defined]
