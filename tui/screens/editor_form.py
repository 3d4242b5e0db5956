"""The config editor's form and views kept in step with its document: rows built from the schema, field
edits applied to the document, raw-text edits parsed back into it; the title, lint list, launch command,
status line, and moving between tabs."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from textual.containers import VerticalScroll
from textual.content import Content
from textual.css.query import QueryError
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import OptionList, Select, Static, Switch, TabbedContent, TextArea
from textual.widgets.option_list import Option

from tui.configs.atomic import FileStamp
from tui.configs.document import ConfigDocument, KeyPath, dotted, load_document
from tui.configs.editing import set_value
from tui.configs.errors import ConfigError, ConfigSyntaxError
from tui.configs.kinds import KIND_TITLES, ConfigKind, parse_kind
from tui.configs.launch import LaunchFormat, render_launch
from tui.configs.lint import Finding, lint_document
from tui.configs.restart import HEALTH_TIMEOUT_S
from tui.configs.schemas import field_spec, field_specs, shown_value, typed_value, unknown_keys
from tui.paths import home_dir
from tui.sanitize import safe_line, safe_text
from tui.widgets.config_field import MISSING, ConfigFieldRow, value_text
from tui.widgets.edit_mode import EDIT_HINT, EDITING_HINT, FieldInput
from tui.widgets.messages import ConfigFieldEdited

_SEVERITY_MARK = {"error": "✗", "warning": "!", "info": "i"}
TAB_FOCUS = {"form": "#form-fields", "raw-pane": "#raw", "lint": "#lint-list", "launch": "#launch-scroll"}
FIELD_HINTS = {FieldInput: EDIT_HINT, Select: "enter opens the choices", Switch: "enter or space switches it"}


def file_text(text: str) -> Content:
    """A label quoting the file (a model name, an unknown key): controls made visible, no markup."""
    return Content(safe_text(text))


def short_path(path: Path, width: int) -> str:
    """`path` relative to the working folder or `~` when under them; too long, its leading folders "…/"."""
    text = str(path)
    with contextlib.suppress(ValueError):
        text = str(Path(os.path.abspath(path)).relative_to(Path.cwd()))
    home = str(home_dir())
    if text.startswith(home + os.sep):
        text = "~" + text[len(home) :]
    parts = text.split(os.sep)
    while len(text) > width and len(parts) > 2:
        parts = ["…", *parts[2:]] if parts[0] == "…" else ["…", *parts[1:]]
        text = os.sep.join(parts)
    return text


def syntax_message(error: ConfigSyntaxError) -> str:
    return f"syntax error at line {error.line}, column {error.column}: {error.reason}"


@dataclass
class FieldChange:
    path: KeyPath
    value: Any  # MISSING when the key did not exist
    text_before: str
    text_after: str


class EditorForm(Screen[None]):
    """The editor's state, and its views kept in step with its document (the form, the raw text, lint,
    launch, the status line) and the edits made in them; saving is above (EditorSaving)."""

    def __init__(
        self,
        path: Path,
        *,
        kind: str | None = None,
        restart_command: list[str] | None = None,
        health_url: str | None = None,
        log_file: Path | None = None,
        health_timeout_s: float = HEALTH_TIMEOUT_S,
        client: httpx.AsyncClient | None = None,
        keep_recovery_note: Callable[[str], None] | None = None,
    ) -> None:
        """`client`: the app's httpx client (None: the dialog's own); `keep_recovery_note`: told where the
        unsaved text went when the app fails."""
        super().__init__()
        self.path = Path(path)
        self.client = client
        self._keep_recovery_note = keep_recovery_note
        self.log_file = log_file  # the endpoint's log: its error lines explain a failed restart
        self.health_timeout_s = health_timeout_s
        self.forced_kind: ConfigKind | None = parse_kind(kind) if kind else None
        self.restart_command = restart_command or None
        self.health_url = health_url
        self.kind: ConfigKind | None = None
        self.document: ConfigDocument | None = None
        self.syntax_error: ConfigSyntaxError | None = None
        self.saved_text = ""
        self.stamp: FileStamp | None = None
        self.findings: list[Finding] = []
        self.launch_format: LaunchFormat = "cli"
        # One entry per field change: the key, its previous value, and the texts before and after.
        self._undo: list[FieldChange] = []
        self._raw_shown_text = ""
        self._rows: dict[KeyPath, ConfigFieldRow] = {}
        self._form_lock = asyncio.Lock()
        self._form_wanted = False
        self._leave_question_open = False
        self.loaded = False  # True once the file is shown (tests and callers can wait for it)
        # The field focused on opening: its focus hint would replace the opening status at once.
        self._opening_focus: Widget | None = None

    def _value(self, path: KeyPath) -> Any:
        return self.document.get(path) if self.document is not None and self.document.has(path) else MISSING

    def _load_raw(self, text: str) -> None:
        raw = self.query_one("#raw", TextArea)
        location = raw.cursor_location
        raw.load_text(text)
        self._raw_shown_text = raw.text
        row = min(location[0], raw.document.line_count - 1)
        raw.move_cursor((row, min(location[1], len(raw.document.get_line(row)))))

    def _set_document(
        self, document: ConfigDocument, *, origin: KeyPath | None = None, from_raw: bool = False
    ) -> None:
        self.document = document
        self.syntax_error = None
        if not from_raw:
            self._load_raw(document.text)
        for path, row in self._rows.items():
            if path != origin:
                if from_raw:
                    row.set_error(None)
                row.show(self._value(path))
            else:  # its Input keeps what was typed; the row knows the value is applied (not pending)
                row.applied(self._value(path))
        self._refresh_views()

    def _refresh_views(self) -> None:
        kind_title = KIND_TITLES.get(self.kind or "", "")
        marker = " · modified" if self.current_text() != self.saved_text else ""
        self.query_one("#editor-title", Static).update(safe_line(f"{self.path} · {kind_title}{marker}"))
        lint_list = self.query_one("#lint-list", OptionList)
        lint_list.clear_options()
        if self.document is None:
            self.findings = []
            if (error := self.syntax_error) is not None:
                label = f"✗ L{error.line}:{error.column} syntax: {error.reason}"
                lint_list.add_option(Option(file_text(label), id="syntax"))
            self.query_one("#launch-text", Static).update("(the file does not parse)")
            self.query_one(TabbedContent).get_tab("lint").label = "Lint ✗"
            return
        self.findings = lint_document(self.document)
        for index, finding in enumerate(self.findings):
            line = f"L{finding.line}" if finding.line else "  "
            label = (
                f"{_SEVERITY_MARK[finding.severity]} {line} [{finding.id}] {finding.message}\n"
                f"    fix: {finding.fix}"
            )
            lint_list.add_option(Option(file_text(label), id=str(index)))  # findings quote the file
        if not self.findings:
            lint_list.add_option(Option("no findings", disabled=True))
        errors = sum(finding.severity == "error" for finding in self.findings)
        label = f"Lint ({len(self.findings)})" + (f" ✗{errors}" if errors else "")
        self.query_one(TabbedContent).get_tab("lint").label = label
        try:
            launch = render_launch(self.document.kind, self.document.data, self.launch_format)
        except ConfigError as error:
            launch = f"(no launch command: {error})"
        self.query_one("#launch-text", Static).update(safe_text(launch))

    def current_text(self) -> str:
        return self.document.text if self.document is not None else self.query_one("#raw", TextArea).text

    def unsaved_text(self) -> str | None:
        """The text with the user's edits when it differs from the saved file, else None."""
        candidates = []
        try:
            candidates.append(self.query_one("#raw", TextArea).text)
        except QueryError:  # unmounted (the app is failing): the last text the raw view held
            if self._raw_shown_text:
                candidates.append(self._raw_shown_text)
        if self.document is not None:
            candidates.append(self.document.text)
        return next((text for text in candidates if text != self.saved_text), None)

    def set_status(self, message: str, *, error: bool = False) -> None:
        status = self.query_one("#editor-status", Static)
        status.update(safe_line(message))  # it may quote the file's name, keys or values
        status.set_class(error, "-error")
        self.call_after_refresh(self._scroll_to_focused_field)  # a status of other height moves the form

    def _scroll_to_focused_field(self) -> None:
        row = self._row_of(self.focused) if self.focused is not None else None
        if row is not None:
            self.query_one("#form-fields").scroll_to_widget(row, animate=False)

    def _goto_line(self, line: int, column: int = 1) -> None:
        self.query_one(TabbedContent).active = "raw-pane"
        raw = self.query_one("#raw", TextArea)
        row = max(0, min(line - 1, raw.document.line_count - 1))
        raw.move_cursor((row, max(0, min(column - 1, len(raw.document.get_line(row))))), center=True)
        raw.focus()

    def _goto_syntax_error(self) -> None:
        if (error := self.syntax_error) is not None:
            self._goto_line(error.line, error.column)
            self.set_status(syntax_message(error), error=True)

    def action_show_tab(self, tab: str) -> None:
        tab_id = "raw-pane" if tab == "raw" else tab
        self.query_one(TabbedContent).active = tab_id
        widget = self._tab_focus_target(tab_id)
        if isinstance(widget, OptionList) and widget.highlighted is None and widget.option_count:
            widget.highlighted = 0  # enter on the first finding jumps to its line at once
        widget.focus()

    def _tab_focus_target(self, tab_id: str) -> Widget:
        """What a tab focuses when shown: the form's first field (else the form), the raw text, the list."""
        if tab_id == "form" and self._rows:
            return next(iter(self._rows.values())).query_one("#value")
        return self.query_one(TAB_FOCUS[tab_id])

    def _row_of(self, widget: Widget) -> ConfigFieldRow | None:
        """The form row whose value `widget` is (None: another widget, a choice's open list)."""
        row = widget.parent.parent if widget.id == "value" and widget.parent is not None else None
        return row if isinstance(row, ConfigFieldRow) else None

    def _field_status(self, row: ConfigFieldRow, widget: Widget) -> str:
        hint = next((text for kind, text in FIELD_HINTS.items() if isinstance(widget, kind)), "")
        return f"{dotted(row.spec.path)}: {hint} · ↑↓ other fields"

    def action_flip_view(self) -> None:
        self.action_show_tab("form" if self.query_one(TabbedContent).active == "raw-pane" else "raw")

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
            widgets.append(rows.setdefault(spec.path, ConfigFieldRow(spec, self._value(spec.path))))
        if unknown := unknown_keys(self.kind, self.document.data):
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
                new_document = self.document.without(path)
            else:
                typed = typed_value(value, self.kind, path) if isinstance(value, str) else value
                if current is not MISSING and typed == current and type(typed) is type(current):
                    row.set_error(None)
                    return True
                new_document = set_value(self.document, path, typed)
        except ConfigError as error:
            reason = str(error).split(" is invalid: ", 1)[-1].removeprefix(f"{dotted(path)}: ")
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
        had_form = self.document is not None
        try:
            document = load_document(text, self.kind, self.path)
        except ConfigSyntaxError as error:
            self.document = None
            self.syntax_error = error
            self._refresh_views()
            self.set_status(syntax_message(error), error=True)
            if had_form:
                self.run_worker(self._build_form(), group="editor-form", exit_on_error=False)
            return
        unknown_before = unknown_keys(self.kind, self.document.data) if self.document is not None else None
        self._set_document(document, from_raw=True)
        self.set_status("raw text parses")
        if not had_form or unknown_keys(self.kind, document.data) != unknown_before:
            self.run_worker(self._build_form(), group="editor-form", exit_on_error=False)
