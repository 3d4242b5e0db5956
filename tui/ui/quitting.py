"""Every way out of a spectop app (ctrl+q, ctrl+c, the palette) asks first when a screen holds unsaved work:
a screen whose `ask_before_quitting()` is True asks and exits the app itself."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from textual.binding import ActiveBinding, Binding
from textual.dom import DOMNode
from textual.screen import Screen

QUIT_BINDINGS = [
    Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True),
]
# Every Screen binds ctrl+c to copying a mouse selection; that one does not keep ctrl+c from quitting.
_DEFAULT_CTRL_C_ACTIONS = frozenset({"screen.copy_text", "copy_text"})


@runtime_checkable
class AsksFirst(Protocol):
    """A screen that may hold unsaved work."""

    def ask_before_quitting(self) -> bool:
        """True when the screen has taken over the quit (it asks, then exits the app itself)."""
        ...


class QuittableApp(Protocol):
    """What the mixin needs of the Textual App it is mixed into."""

    @property
    def screen(self) -> Screen[Any]: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    async def run_action(self, action: str, default_namespace: DOMNode | None = None) -> bool: ...

    async def action_quit(self) -> None: ...

    def exit(self) -> None: ...


def _screen_ctrl_c(app: QuittableApp) -> ActiveBinding | None:
    """The screen's (or its focused widget's) own priority ctrl+c, if it has an enabled one."""
    active = app.screen.active_bindings.get("ctrl+c")
    if active is None or active.node is app or not active.enabled:
        return None
    if active.binding.action in _DEFAULT_CTRL_C_ACTIONS:
        return None
    return active


class AsksBeforeQuitting:
    """Mixin for a Textual App; add QUIT_BINDINGS to its BINDINGS (Textual reads those per class)."""

    async def action_interrupt(self: QuittableApp) -> None:
        """ctrl+c: a screen's own use of it comes first (the bench cancels a burst); otherwise quit."""
        own = _screen_ctrl_c(self)
        if own is not None:
            await self.run_action(own.binding.action, own.node)
            return
        await self.action_quit()

    async def action_quit(self: QuittableApp) -> None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, AsksFirst) and screen.ask_before_quitting():
                return
        self.exit()
