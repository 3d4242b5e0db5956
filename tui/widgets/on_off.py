"""A one-line on/off toggle that says its state in words ("prime on" / "prime off"): colour alone does
not say it, and NO_COLOR has none. Space (or a click) flips it; enter is left to the screen."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


def state_text(label: str, value: bool) -> str:
    """The toggle's text, one width for both states (the row does not shift when it flips)."""
    return f"{label} {'on ' if value else 'off'}"


class OnOff(Widget, can_focus=True):
    DEFAULT_CSS = """
    OnOff { width: auto; height: 1; }
    OnOff:focus { text-style: reverse; }
    OnOff.-on { text-style: bold; }
    OnOff.-on:focus { text-style: bold reverse; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "flip", "Toggle", show=False, tooltip="turn the focused option on / off"),
    ]

    value: reactive[bool] = reactive(False)

    class Changed(Message):
        def __init__(self, toggle: OnOff, value: bool) -> None:
            super().__init__()
            self.toggle = toggle
            self.value = value

        @property
        def control(self) -> OnOff:
            return self.toggle

    def __init__(self, label: str, value: bool = False, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.set_reactive(OnOff.value, value)
        self.set_class(value, "-on")

    def render(self) -> Content:
        return Content(state_text(self.label, self.value))

    def watch_value(self, value: bool) -> None:
        self.set_class(value, "-on")
        self.post_message(self.Changed(self, value))

    def action_flip(self) -> None:
        self.value = not self.value

    def on_click(self) -> None:
        self.action_flip()
