"""What both spectop Apps share: the quit keys (asking first when a screen holds unsaved work), help, the
terminal guard, worker failures reported, recovery notes kept, NO_COLOR honoured."""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from textual.app import App
from textual.binding import Binding, BindingType

from tui.screens.help import HelpScreen
from tui.ui.terminal_guard import GuardsDrawnText
from tui.ui.themes import FOOTER_CSS, honour_no_color
from tui.widgets.messages import KeepsRecoveryNotes, ReportsWorkerFailures

ReturnType = TypeVar("ReturnType")
# Every Screen binds ctrl+c to copying a mouse selection; that one does not keep ctrl+c from quitting.
_DEFAULT_CTRL_C_ACTIONS = frozenset({"screen.copy_text", "copy_text"})


@runtime_checkable
class AsksFirst(Protocol):
    def ask_before_quitting(self) -> bool:
        """True when the screen has taken over the quit (it asks, then exits the app itself)."""


def app_bindings(quit_tooltip: str, *own: BindingType) -> list[BindingType]:
    """An App's BINDINGS: q, help, its own keys, then the quit keys that always work (in this order)."""
    return [
        # Outside a field's edit mode a letter is a command.
        Binding("q", "quit", "Quit", tooltip=quit_tooltip),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="the keys of this screen"),
        Binding("f1", "help", "Help", show=False, tooltip="the keys of this screen"),
        *own,
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True),
    ]


class SpectopBase(KeepsRecoveryNotes, ReportsWorkerFailures, GuardsDrawnText, App[ReturnType]):
    CSS = FOOTER_CSS

    def __init__(self) -> None:
        super().__init__()
        honour_no_color(self)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    async def action_interrupt(self) -> None:
        """ctrl+c: a screen's (or its focused widget's) own enabled use of it comes first (the bench cancels
        a burst); otherwise quit."""
        own = self.screen.active_bindings.get("ctrl+c")
        if (
            own is None
            or own.node is self
            or not own.enabled
            or own.binding.action in _DEFAULT_CTRL_C_ACTIONS
        ):
            await self.action_quit()
        else:
            await self.run_action(own.binding.action, own.node)

    async def action_quit(self) -> None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, AsksFirst) and screen.ask_before_quitting():
                return
        self.exit()
