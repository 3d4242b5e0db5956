"""Fields that take text only once the user chose to type, as in htop and k9s: in command mode their
letters are the screen's keys; `enter`/`i` (or a digit, spreadsheet-style) start editing, `esc` cancels.
Their bindings run as the key arrives, so that keys at tmux or paste speed keep their order. And a one-line
on/off toggle that says its state in words ("prime on" / "prime off"): colour alone does not say it, and
NO_COLOR has none; space (or a click) flips it, enter is left to the screen.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input, TextArea

EDIT_HINT = "enter or i edits the field · a digit replaces it"
EDITING_HINT = "enter applies · esc cancels"
# The help screen's row (wrapped at 26 columns): how editing starts and ends.
HELP_ROW = (("⏎", "i", "0-9"), "edit the field (a digit replaces it); ⏎ applies, esc cancels")
# Input's own keys (cursor moves, deleting, pasting, submit): none of them act outside edit mode.
_INPUT_ACTIONS = frozenset(binding.action for binding in Binding.make_bindings(Input.BINDINGS))
NUMBER_START = frozenset("0123456789.,-")  # characters that start typing when no binding claims them


async def run_own_binding(widget: Widget, event: events.Key) -> bool:
    """Run `widget`'s own binding for the key now; False when it has none that acts here."""
    active = widget.screen.active_bindings.get(event.key)
    if active is None or active.node is not widget or not active.enabled:
        return False
    event.stop()
    event.prevent_default()
    await widget.run_action(active.binding.action)
    return True


class FieldInput(Input):
    DEFAULT_CSS = """
    FieldInput.-editing { text-style: bold; }
    FieldInput:focus.-editing { background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        # Subclass bindings replace Input's for the same key: enter edits, and in edit mode submits.
        Binding("enter", "enter", "Edit", show=False, tooltip=HELP_ROW[1]),
        Binding("i", "start_editing", "Edit", show=False, tooltip=HELP_ROW[1]),
        Binding("escape", "cancel_editing", "Cancel", show=False, tooltip="cancel: the text as it was"),
    ]

    class Started(Message):
        """The user chose to type into the field (edit mode)."""

        def __init__(self, field: FieldInput) -> None:
            super().__init__()
            self.field = field

    class Cancelled(Started):  # Textual dispatches a message to its own class's handler only
        """The user cancelled an edit (esc): the field shows its text from before, nothing was applied."""

    def __init__(self, value: str | None = None, placeholder: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("select_on_focus", False)
        super().__init__(value, placeholder, **kwargs)
        self.editing = False
        self._text_before_editing = ""

    def _set_editing(self, editing: bool) -> None:
        if editing and not self.editing:
            self._text_before_editing = self.value
            self.post_message(self.Started(self))
        self.editing = editing
        self.set_class(editing, "-editing")
        self._cursor_visible = editing
        self.refresh()
        self.refresh_bindings()  # the screen's letter keys are on (command mode) or off (edit mode)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Textual hides the bindings of keys a focused Input may type: only in edit mode here."""
        return self.editing and super().check_consume_key(key, character)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start_editing":
            return not self.editing
        if action == "enter":
            return True
        if action == "cancel_editing" or action in _INPUT_ACTIONS:
            return self.editing  # outside edit mode the key goes on to the screen (esc closes it)
        return super().check_action(action, parameters)

    def action_start_editing(self) -> None:
        self._set_editing(True)
        self.cursor_position = len(self.value)

    async def action_enter(self) -> None:
        if self.editing:
            await self.action_submit()
        else:
            self.action_start_editing()

    def action_cancel_editing(self) -> None:
        self._set_editing(False)
        self.value = self._text_before_editing  # outside edit mode: no edit (ConfigFieldRow ignores it)
        self.post_message(self.Cancelled(self))

    async def action_submit(self) -> None:
        self._set_editing(False)
        await super().action_submit()

    # prevent_default() keeps Input's handler from running (the key still bubbles to the screen).

    async def _on_key(self, event: events.Key) -> None:
        if await run_own_binding(self, event):
            self._restart_blink()
            return
        if self.editing:
            return
        if self._starts_a_number(event):
            self._set_editing(True)
            self.select_all()  # Input's handler types the character in place of the whole text
            return
        event.prevent_default()

    def _starts_a_number(self, event: events.Key) -> bool:
        """A digit (or `.,-`) no binding of the screen or the app claims: the user is typing a number."""
        if event.character is None or event.character not in NUMBER_START:
            return False
        return event.key not in self.screen.active_bindings

    def _on_paste(self, event: events.Paste) -> None:
        if not self.editing:
            event.prevent_default()

    def _restart_blink(self) -> None:
        if self.editing:
            super()._restart_blink()
        else:
            self._cursor_visible = False  # a field in command mode shows no cursor

    def _toggle_cursor(self) -> None:
        if self.editing:
            super()._toggle_cursor()

    def _on_blur(self, event: events.Blur) -> None:
        self._set_editing(False)

    async def _on_click(self, event: events.Click) -> None:
        self._set_editing(True)  # a click on a field is a choice to type into it
        self.call_after_refresh(self._restart_blink)


class RawTextArea(TextArea):
    """The raw view: read-only until `i` or `enter`; `esc` stops editing (a second esc goes on)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,i", "start_editing", "Edit", show=False, tooltip="edit the text; esc stops"),
        Binding("escape", "stop_editing", "Done", show=False, tooltip="stop editing, keep the text"),
    ]

    def on_mount(self) -> None:
        self.read_only = True

    @property
    def editing(self) -> bool:
        return not self.read_only

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start_editing":
            return self.read_only
        if action == "stop_editing":
            return not self.read_only
        return super().check_action(action, parameters)

    def action_start_editing(self) -> None:
        self.read_only = False
        self.refresh_bindings()

    def action_stop_editing(self) -> None:
        self.read_only = True
        self.refresh_bindings()

    async def _on_key(self, event: events.Key) -> None:
        # esc in edit mode is the binding's (TextArea's own escape would move the focus)
        await run_own_binding(self, event)

    def _on_blur(self, event: events.Blur) -> None:
        self.read_only = True


class OnOff(Widget, can_focus=True):
    DEFAULT_CSS = """
    OnOff { width: auto; height: 1; }
    OnOff:focus { text-style: reverse; }
    OnOff.-on { text-style: bold; }
    OnOff.-on:focus { text-style: bold reverse; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "flip", "Toggle", show=False, tooltip="turn the focused option on / off")
    ]

    value: reactive[bool] = reactive(False)

    def __init__(self, label: str, value: bool = False, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.set_reactive(OnOff.value, value)
        self.set_class(value, "-on")

    def render(self) -> Content:
        return Content(f"{self.label} {'on ' if self.value else 'off'}")  # one width: the row never shifts

    def watch_value(self, value: bool) -> None:
        self.set_class(value, "-on")

    def action_flip(self) -> None:
        self.value = not self.value

    def on_click(self) -> None:
        self.action_flip()
