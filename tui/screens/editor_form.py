"""The config editor's form: rows built from the schema, field edits applied to the document, and
raw-text edits parsed back into it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from textual.containers import VerticalScroll
from textual.widgets import Static, TextArea

from tui.configs.document import KeyPath, dotted, load_document
from tui.configs.editing import (
    set_value,
)
from tui.configs.errors import ConfigError, ConfigSyntaxError
from tui.configs.schemas import field_spec, field_specs, shown_value, typed_value, unknown_keys
from tui.screens.editor_views import EditorViews, syntax_message
from tui.widgets.config_field import MISSING, ConfigFieldRow, value_text
from tui.widgets.edit_mode import EDITING_HINT
from tui.widgets.messages import ConfigFieldEdited


@dataclass
class FieldChange:
    path: KeyPath
    value: Any  # MISSING when the key did not exist
    text_before: str
    text_after: str


class EditorForm(EditorViews):
    """The form and the edits (views below, saving above)."""

    _undo: list[FieldChange]  # one entry per field change, newest last
    _form_lock: asyncio.Lock
    _form_wanted: bool

    async def _build_form(self) -> None:
        """Rebuild the form from the document; returns once a build that started after the call is done.
        Builds run one at a time, so an update never reaches a row being removed or not yet composed."""
        self._form_wanted = True
        async with self._form_lock:
            while self._form_wanted:
                self._form_wanted = False
                await self._build_form_once()

    async def _build_form_once(self) -> None:
        form = self.query_one("#form-fields", VerticalScroll)
        self._rows = {}
        await form.remove_children()
        assert self.kind is not None
        if self.document is None:
            error = self.syntax_error
            where = f" at line {error.line}, column {error.column}" if error else ""
            await form.mount(
                Static(f"The file does not parse{where}: fix it in the raw view (F3).", id="form-message")
            )
            return
        widgets: list[Any] = []
        rows: dict[KeyPath, ConfigFieldRow] = {}
        section: tuple[str, ...] = ()
        for spec in field_specs(self.kind):
            if spec.type == "table":
                continue
            if len(spec.path) > 1 and spec.path[:-1] != section:
                section = spec.path[:-1]
                widgets.append(Static(f"[{dotted(section)}]", classes="section", markup=False))
            row = ConfigFieldRow(spec, self._value(spec.path))
            rows[spec.path] = row
            widgets.append(row)
        unknown = unknown_keys(self.kind, self.document.data)
        if unknown:
            note = "unknown keys (kept as they are; edit them in the raw view)"
            widgets.append(Static(note, classes="section"))
            for path in unknown:
                text = shown_value(path, value_text(self.document.get(path)))
                widgets.append(Static(f"{dotted(path)} = {text}", classes="unknown", markup=False))
        await form.mount_all(widgets)
        self._rows = rows
        for path, row in rows.items():  # the document may have changed while the rows were mounted
            row.show(self._value(path))

    def on_config_field_edited(self, message: ConfigFieldEdited) -> None:
        message.stop()
        row = self._rows.get(message.path)
        if not message.commit and row is not None and row.text != message.value:
            return  # text typed then changed again (or the edit cancelled): checking it is too late
        self.apply_field(message.path, message.value, commit=message.commit)

    def apply_field(self, path: KeyPath, value: str | bool | None, *, commit: bool = True) -> bool:
        """Validate a form value; when `commit`, apply it to the document. False when invalid."""
        row = self._rows.get(path)
        if row is None or self.document is None or self.kind is None:
            return False
        spec = field_spec(self.kind, path)
        current = self._value(path)
        message_path = path
        try:
            if value == "":
                # Clearing an input while retyping must not move the key: it is kept until a value is typed.
                hint = None if current is MISSING else "empty: the key keeps its value; type a new one"
                row.set_error(hint)
                return hint is None
            if value is None:
                if current is MISSING:
                    row.set_error(None)
                    return True
                if spec is not None and spec.required:
                    row.set_error("required: this field cannot be empty")
                    return False
                new_document = self.document.without(message_path)
            else:
                typed = typed_value(value, self.kind, message_path) if isinstance(value, str) else value
                if current is not MISSING and typed == current and type(typed) is type(current):
                    row.set_error(None)
                    return True
                new_document = set_value(self.document, message_path, typed)
        except ConfigError as error:
            reason = str(error).split(" is invalid: ", 1)[-1].removeprefix(f"{dotted(message_path)}: ")
            row.set_error(reason)
            return False
        row.set_error(None)
        if not commit:
            self.set_status(f"{dotted(path)}: valid · {EDITING_HINT}")
            return True
        if self._undo and self._undo[-1].path == path and self._undo[-1].text_after == self.document.text:
            self._undo[-1].text_after = new_document.text  # typing on in one field is one change
        else:
            self._undo.append(FieldChange(path, current, self.document.text, new_document.text))
        self._set_document(new_document, origin=path)
        self.set_status(f"{dotted(path)} changed (ctrl+z undoes, ctrl+s saves)")
        return True

    def _commit_pending_fields(self) -> KeyPath | None:
        """Apply text typed into the form but not yet applied; the first invalid field, or None."""
        for path, row in self._rows.items():
            text = row.pending_text
            if text is not None and not self.apply_field(path, text):
                return path
        return None

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        text = event.text_area.text
        if text == self._raw_shown_text or self.kind is None:
            return
        self._raw_shown_text = text
        if self.document is not None and text == self.document.text:
            return
        try:
            document = load_document(text, self.kind, self.path)
        except ConfigSyntaxError as error:
            had_form = self.document is not None
            self.document = None
            self.syntax_error = error
            self._refresh_views()
            self.set_status(syntax_message(error), error=True)
            if had_form:
                self.run_worker(self._build_form(), group="editor-form", exit_on_error=False)
            return
        had_form = self.document is not None
        unknown_before = unknown_keys(self.kind, self.document.data) if self.document is not None else None
        self._set_document(document, from_raw=True)
        self.set_status("raw text parses")
        if not had_form or unknown_keys(self.kind, document.data) != unknown_before:
            self.run_worker(self._build_form(), group="editor-form", exit_on_error=False)
