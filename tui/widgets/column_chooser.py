"""The table view's column chooser (`c`): space shows or hides, shift+up/down move, enter applies."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

ALWAYS = "name"


class ColumnChooser(ModalScreen[list[str] | None]):
    DEFAULT_CSS = """
    ColumnChooser { align: center middle; }
    ColumnChooser > Vertical { width: 50; max-width: 100%; height: auto; max-height: 100%;
                               border: thick $accent; background: $surface; padding: 0 1; }
    ColumnChooser OptionList { height: auto; max-height: 16; }
    ColumnChooser .keys { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "flip", "show/hide", tooltip="show or hide the column"),
        Binding("shift+up,K", "move(-1)", "earlier", tooltip="move the column left"),
        Binding("shift+down,J", "move(1)", "later", tooltip="move the column right"),
        Binding("enter", "apply", "apply", tooltip="apply (remembered)"),
        Binding("escape", "cancel", "cancel", tooltip="leave the columns as they were"),
    ]

    def __init__(self, columns: list[tuple[str, str]], shown: list[str], notes: dict[str, str]) -> None:
        """`columns`: (key, header) of every column; `shown`: the keys shown now, in order."""
        super().__init__()
        headers = dict(columns)
        self.order = [key for key in shown if key in headers] + [
            key for key, _ in columns if key not in shown
        ]
        self.shown = set(shown)
        self.headers = headers
        self.notes = notes

    def _label(self, key: str) -> str:  # plain text (as Content): "[x]" is not markup
        mark = "[x]" if key in self.shown else "[ ]"
        note = f"  ({self.notes[key]})" if key in self.notes else ""
        always = "  (always)" if key == ALWAYS else ""
        return f"{mark} {self.headers[key]}{always}{note}"

    def compose(self) -> ComposeResult:
        with Vertical() as frame:
            frame.border_title = "table columns"
            yield OptionList(id="columns")
            yield Static("space show/hide · shift+↑↓ or K/J move · enter apply · esc cancel", classes="keys")

    def on_mount(self) -> None:
        self._refill(0)
        self.query_one(OptionList).focus()

    def _refill(self, highlighted: int) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(Content(self._label(key)), id=key) for key in self.order])
        options.highlighted = highlighted

    def _current(self) -> int | None:
        return self.query_one(OptionList).highlighted

    def action_flip(self) -> None:
        if (index := self._current()) is None:
            return
        key = self.order[index]
        if key != ALWAYS:
            self.shown.symmetric_difference_update({key})
        self._refill(index)

    def action_move(self, step: int) -> None:
        index = self._current()
        if index is None or not 0 <= index + step < len(self.order):
            return
        self.order[index], self.order[index + step] = self.order[index + step], self.order[index]
        self._refill(index + step)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_apply()  # enter on the list

    def action_apply(self) -> None:
        self.dismiss([key for key in self.order if key in self.shown])

    def action_cancel(self) -> None:
        self.dismiss(None)
