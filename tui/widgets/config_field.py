"""One row of the config editor's form: the key, an input fitting its type, and a help/error line."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static, Switch
from textual.widgets.select import InvalidSelectValueError

from tui.configs.schemas import FieldSpec
from tui.widgets.edit_mode import FieldInput
from tui.widgets.messages import ConfigFieldEdited

MISSING = object()
FOCUS_MARK = "▶ "  # before the focused row's key: focus is seen without colour (NO_COLOR) too


def value_text(value: Any) -> str:
    if value is MISSING or value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def switch_text(value: Any) -> str:
    """A switch's state in words (colour alone does not say it, and NO_COLOR has none)."""
    if value is MISSING or value is None:
        return " off (not set)"
    return " on" if value is True else " off"


class ConfigFieldRow(Widget):
    """Posts ConfigFieldEdited when the user changes the value; `show` sets it from the document."""

    DEFAULT_CSS = """
    ConfigFieldRow { height: auto; padding: 0 1; }
    ConfigFieldRow > Horizontal { height: 1; }
    ConfigFieldRow .field-key { width: 36; text-wrap: nowrap; text-overflow: ellipsis; }
    ConfigFieldRow:focus-within .field-key { text-style: bold reverse; }
    ConfigFieldRow Input { width: 1fr; }
    ConfigFieldRow Select { width: 1fr; }
    ConfigFieldRow Switch { border: none; height: 1; padding: 0; width: auto; }
    ConfigFieldRow .field-help { color: $text-muted; height: auto; padding-left: 4; }
    ConfigFieldRow.-invalid .field-help { color: $error; }
    ConfigFieldRow.-invalid .field-key { color: $error; }
    """

    def __init__(self, spec: FieldSpec, value: Any) -> None:
        super().__init__(id="field-" + "--".join(spec.path))
        self.spec = spec
        self._value = value
        self._error: str | None = None

    def compose(self) -> ComposeResult:
        spec = self.spec
        with Horizontal():
            yield Label(self._key_text(), classes="field-key")
            if spec.type == "bool":
                yield Switch(value=self._value is True, id="value")
                yield Label(switch_text(self._value), id="unset")
            elif spec.type == "choice":
                options = [(choice, choice) for choice in spec.choices]
                current = self._value if isinstance(self._value, str) else None
                if current is not None and current not in spec.choices:
                    options.append((f"{current} (unknown)", current))
                yield Select(
                    options, prompt="(not set)", allow_blank=True, value=current or Select.NULL,
                    compact=True, id="value",
                )  # fmt: skip
            else:
                # the range is on the help line below: said once
                yield FieldInput(value_text(self._value), placeholder="(not set)", compact=True, id="value")
        yield Static(self._help_text(), classes="field-help", markup=False)

    def _key_text(self) -> str:
        mark = FOCUS_MARK if self.has_focus_within else " " * len(FOCUS_MARK)
        return mark + self.spec.path[-1] + (" *" if self.spec.required else "")

    @on(events.DescendantFocus)
    @on(events.DescendantBlur)
    def _show_focus(self) -> None:
        # Focus and blur come from different widgets in no set order: the row asks where the focus is.
        if (key := self.query_one_optional(".field-key", Label)) is not None:
            key.update(self._key_text())

    def _help_text(self) -> str:
        if self._error:
            return f"✗ {self._error}"
        return f"{self.spec.help}  {self.spec.range_text}" if self.spec.range_text else self.spec.help

    # A row being removed or not yet composed has no children: only its state changes.

    def set_error(self, error: str | None) -> None:
        self._error = error
        self.set_class(error is not None, "-invalid")
        if (help_line := self.query_one_optional(".field-help", Static)) is not None:
            help_line.update(self._help_text())

    def applied(self, value: Any) -> None:
        """The value typed into this row is in the document now (the widget is left as typed)."""
        self._value = value

    def show(self, value: Any) -> None:
        """Show the document's value (after an undo or a raw edit) without posting an edit."""
        self._value = value
        if (widget := self.query_one_optional("#value")) is None:
            return
        if isinstance(widget, Switch):
            if widget.value != (value is True):
                with widget.prevent(Switch.Changed):
                    widget.value = value is True
            self._say_unset(value)
        elif isinstance(widget, Select):
            target = value if isinstance(value, str) else Select.NULL
            if widget.value != target:
                # a value not among the options (InvalidSelectValueError) leaves the widget as it is
                with widget.prevent(Select.Changed), contextlib.suppress(InvalidSelectValueError):
                    widget.value = target
        elif isinstance(widget, Input) and self._error is None:
            text = value_text(value)
            if widget.value != text:
                with widget.prevent(Input.Changed):
                    widget.value = text

    @property
    def text(self) -> str | None:
        """The Input's text (None: the row has a switch or a choice, or is not composed)."""
        widget = self.query_one_optional("#value")
        return widget.value if isinstance(widget, Input) else None

    @property
    def pending_text(self) -> str | None:
        """The Input's text when it differs from the document's value (typed but not yet applied)."""
        text = self.text
        return text if text is not None and text != value_text(self._value) else None

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if isinstance(event.input, FieldInput) and not event.input.editing:
            return  # Input says "changed" on focus too: only what is typed is an edit
        self.post_message(ConfigFieldEdited(self.spec.path, event.value, commit=False))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(ConfigFieldEdited(self.spec.path, event.value))

    def on_input_blurred(self, event: Input.Blurred) -> None:
        event.stop()
        if self.pending_text is not None:
            self.post_message(ConfigFieldEdited(self.spec.path, event.value))

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        self._say_unset(event.value)
        self.post_message(ConfigFieldEdited(self.spec.path, event.value))

    def _say_unset(self, value: Any) -> None:
        if (unset := self.query_one_optional("#unset", Label)) is not None:
            unset.update(switch_text(value))

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        value = None if event.value is Select.NULL else str(event.value)
        self.post_message(ConfigFieldEdited(self.spec.path, value))
