"""Fields that take text only once the user chose to type, as in htop and k9s.

A focused `FieldInput` is in command mode: its letters are the screen's keys (`?` help, `q` quit, `a`
apply …) and its editing keys do nothing. `enter` or `i` enters edit mode (a click too); `enter` then
applies the text (Input.Submitted) and `esc` leaves, keeping what was typed; moving the focus away
leaves as well. A digit (or `.`, `,`, `-`) that is no key of the screen here is the start of a number:
it enters edit mode and is typed (the tune form's "1" was swallowed without a word; a bound key such as
the detail screen's `1` stays a command). `RawTextArea` is the same for the config editor's raw view:
it can be scrolled and read in command mode, `i` / `enter` start editing, `esc` stops.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import Input

from tui.widgets.safe_editing import SafeInput, SafeTextArea

EDIT_HINT = "enter or i edits the field · esc leaves"
HELP_ROW = (("⏎", "i"), "edit the field; esc leaves")  # the help screen's row (26 columns)
# Input's own keys (cursor moves, deleting, pasting, submit): none of them act outside edit mode.
_INPUT_ACTIONS = frozenset(binding.action for binding in Binding.make_bindings(Input.BINDINGS))
NUMBER_START = frozenset("0123456789.,-")  # characters that start typing when no binding claims them


class FieldInput(SafeInput):
    DEFAULT_CSS = """
    FieldInput.-editing { text-style: bold; }
    FieldInput:focus.-editing { background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        # Subclass bindings replace Input's for the same key: enter edits, and in edit mode submits.
        Binding("enter", "enter", "Edit", show=False, tooltip=HELP_ROW[1]),
        Binding("i", "start_editing", "Edit", show=False, tooltip=HELP_ROW[1]),
        Binding("escape", "stop_editing", "Done", show=False, tooltip="leave the field, keep text"),
    ]

    def __init__(self, value: str | None = None, placeholder: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("select_on_focus", False)
        super().__init__(value, placeholder, **kwargs)
        self.editing = False

    def _set_editing(self, editing: bool) -> None:
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
        if action == "stop_editing" or action in _INPUT_ACTIONS:
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

    def action_stop_editing(self) -> None:
        self._set_editing(False)

    async def action_submit(self) -> None:
        self._set_editing(False)
        await super().action_submit()

    # Textual calls the handler of every class in the MRO: prevent_default() keeps Input's from running
    # (the key still bubbles to the screen's bindings); in edit mode Input's handlers run as usual.

    async def _on_key(self, event: events.Key) -> None:
        if self.editing:
            return
        if self._starts_a_number(event):
            self.action_start_editing()  # Input's handler types the character
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


class RawTextArea(SafeTextArea):
    """The raw view: read-only until `i` or `enter`; `esc` stops editing (a second esc goes on)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,i", "start_editing", "Edit", show=False, tooltip=HELP_ROW[1]),
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
        if not self.read_only and event.key == "escape":
            event.prevent_default()  # the binding stops editing (TextArea's own escape moves the focus)

    def _on_blur(self, event: events.Blur) -> None:
        self.read_only = True
