"""The config editor: a form of the schema's fields, the raw text, lint findings and the launch command.

Keys: F2 form, F3 raw, F4 lint, F5 launch (ctrl+o flips form/raw), ctrl+s save (after the diff),
ctrl+r save & restart, ctrl+z undo (the last form field change; in the raw view the text's own undo),
c copy the launch command (OSC 52), y launch as CLI/YAML, escape close. Closing, and quitting the app
(ctrl+q, ctrl+c), ask save / discard / cancel while there are unsaved changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static, TabbedContent, TabPane, TextArea
from textual.widgets.option_list import Option

from tui.configs.atomic import BACKUP_SUFFIX, FileStamp, changed_on_disk
from tui.configs.document import ConfigDocument, KeyPath, dotted, load_document
from tui.configs.editing import (
    ChangedOnDiskError,
    OpenedConfig,
    new_issues,
    open_config_async,
    save_text,
    set_value,
    unified_diff,
)
from tui.configs.errors import ConfigError, ConfigSyntaxError
from tui.configs.kinds import KIND_TITLES, ConfigKind, parse_kind
from tui.configs.launch import LaunchFormat, render_launch
from tui.configs.lint import Finding, lint_document
from tui.configs.restart import HEALTH_TIMEOUT_S
from tui.configs.schemas import field_spec, field_specs, shown_value, typed_value, unknown_keys
from tui.messages import ConfigFieldEdited
from tui.sanitize import safe_line, safe_text
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog
from tui.widgets.config_field import MISSING, ConfigFieldRow, value_text
from tui.widgets.safe_editing import SafeTextArea
from tui.worker_errors import ReportsWorkerFailures

_SEVERITY_MARK = {"error": "✗", "warning": "!", "info": "i"}
RECOVERY_SUFFIX = ".spectop-recovery"


def recovery_path(path: Path) -> Path:
    """Where unsaved edits of `path` go when the editor fails: `FILE.spectop-recovery` beside it."""
    return path.with_name(path.name + RECOVERY_SUFFIX)


def fallback_recovery_path(path: Path) -> Path:
    """When the file's folder is not writable: `$XDG_DATA_HOME/spectop/recovery/FILE.spectop-recovery`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "spectop" / "recovery" / (path.name + RECOVERY_SUFFIX)


@dataclass
class _FieldChange:
    path: KeyPath
    value: Any  # MISSING when the key did not exist
    text_before: str
    text_after: str


def _syntax_message(error: ConfigSyntaxError) -> str:
    return f"syntax error at line {error.line}, column {error.column}: {error.reason}"


class EditorScreen(ReportsWorkerFailures, Screen[None]):
    DEFAULT_CSS = """
    EditorScreen #editor-title { height: 1; background: $primary; color: $text; padding: 0 1; }
    EditorScreen #editor-status { height: 1; padding: 0 1; color: $text-muted; }
    EditorScreen #editor-status.-error { color: $error; }
    EditorScreen TabbedContent { height: 1fr; }
    EditorScreen TabPane { padding: 0; }
    EditorScreen #raw { height: 1fr; }
    EditorScreen .section { color: $accent; text-style: bold; padding: 0 1; }
    EditorScreen .unknown { color: $warning; padding: 0 1; }
    EditorScreen #form-message { color: $error; padding: 0 1; height: auto; }
    EditorScreen #launch-text { padding: 0 1; }
    EditorScreen #launch-keys { color: $text-muted; padding: 0 1; height: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        # f4 / f5 come before the rest: the footer keeps them in sight at 80 columns (f2 / f3: ctrl+o).
        Binding("ctrl+s", "save", "save", priority=True),
        Binding("ctrl+r", "save_restart", "save & restart", priority=True),
        Binding("f4", "show_tab('lint')", "lint"),
        Binding("f5", "show_tab('launch')", "launch"),
        Binding("ctrl+z", "undo", "undo", priority=True),
        Binding("ctrl+o", "flip_view", "form/raw"),
        Binding("f2", "show_tab('form')", "form", show=False),
        Binding("f3", "show_tab('raw')", "raw", show=False),
        Binding("c", "copy_launch", "copy"),
        Binding("y", "toggle_launch_format", "cli/yaml"),
        Binding("escape", "close", "close"),
    ]

    def __init__(
        self,
        path: Path,
        *,
        kind: str | None = None,
        restart_command: list[str] | None = None,
        health_url: str | None = None,
        log_file: Path | None = None,
        health_timeout_s: float = HEALTH_TIMEOUT_S,
    ) -> None:
        super().__init__()
        self.path = Path(path)
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
        self._undo: list[_FieldChange] = []
        self._raw_shown_text = ""
        self._rows: dict[KeyPath, ConfigFieldRow] = {}
        self._form_lock = asyncio.Lock()
        self._form_wanted = False
        self._leave_question_open = False
        self.loaded = False  # True once the file is shown (tests and callers can wait for it)

    # --- layout --------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(safe_line(f"{self.path} · loading…"), id="editor-title", markup=False)
        with TabbedContent(initial="form"):
            with TabPane("Form", id="form"):
                yield VerticalScroll(id="form-fields")
            with TabPane("Raw", id="raw-pane"):
                yield SafeTextArea.code_editor("", id="raw", soft_wrap=False)
            with TabPane("Lint", id="lint"):
                yield OptionList(id="lint-list")
            with TabPane("Launch", id="launch"):
                with VerticalScroll(id="launch-scroll"):
                    yield Static("", id="launch-text", markup=False)
                yield Static("[c] copy (OSC 52)   [y] CLI / YAML", id="launch-keys", markup=False)
        yield Static("", id="editor-status", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.load_file()

    @work(exclusive=True, group="editor-load", exit_on_error=False)
    async def load_file(self) -> None:
        try:
            opened = await open_config_async(self.path, self.forced_kind)
        except ConfigError as error:
            self.query_one("#editor-title", Static).update(safe_line(f"{self.path} · cannot open"))
            self.set_status(str(error), error=True)
            return
        await self._show_opened(opened)

    async def _show_opened(self, opened: OpenedConfig) -> None:
        self.kind = opened.kind
        self.saved_text = opened.text
        self.stamp = opened.stamp
        self.document = opened.document
        self.syntax_error = opened.syntax_error
        self._undo.clear()
        raw = self.query_one("#raw", TextArea)
        raw.language = "toml" if self.kind == "vllm_toml" else "json"
        self._load_raw(opened.text)
        await self._build_form()
        self._refresh_views()
        if self.syntax_error is not None:
            self._goto_syntax_error()
        else:
            self.set_status(f"opened {self.path} ({KIND_TITLES[self.kind]})")
            self.action_show_tab("form")
        recovery = recovery_path(self.path)
        if await asyncio.to_thread(recovery.exists):
            self.notify(
                safe_line(f"unsaved edits from a failed session are in {recovery} (compare and delete it)"),
                severity="warning",
                timeout=15,
                markup=False,
            )
        self.loaded = True

    async def _build_form(self) -> None:
        """Rebuild the form from the document; returns once a build that started after the call is done.

        Raw edits arrive while a build is under way (a key typed then erased within 0.1 s): builds run
        one at a time, and `_rows` holds only rows of a finished build, so an update never reaches a
        row that is being removed or not yet composed.
        """
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

    def _value(self, path: KeyPath) -> Any:
        if self.document is None or not self.document.has(path):
            return MISSING
        return self.document.get(path)

    # --- keeping the views in step ------------------------------------------------------------------------

    def _load_raw(self, text: str) -> None:
        raw = self.query_one("#raw", TextArea)
        location = raw.cursor_location
        raw.load_text(text)
        self._raw_shown_text = raw.text
        last_row = raw.document.line_count - 1
        row = min(location[0], last_row)
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
        modified = self.current_text() != self.saved_text
        kind_title = KIND_TITLES.get(self.kind or "", "")
        marker = " · modified" if modified else ""
        self.query_one("#editor-title", Static).update(safe_line(f"{self.path} · {kind_title}{marker}"))
        lint_list = self.query_one("#lint-list", OptionList)
        lint_list.clear_options()
        if self.document is None:
            self.findings = []
            error = self.syntax_error
            if error is not None:
                label = f"✗ L{error.line}:{error.column} syntax: {error.reason}"
                lint_list.add_option(Option(label, id="syntax"))
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
            lint_list.add_option(Option(label, id=str(index)))
        if not self.findings:
            lint_list.add_option(Option("no findings", disabled=True))
        errors = sum(finding.severity == "error" for finding in self.findings)
        self.query_one(TabbedContent).get_tab("lint").label = f"Lint ({len(self.findings)})" + (
            f" ✗{errors}" if errors else ""
        )
        try:
            launch = render_launch(self.document.kind, self.document.data, self.launch_format)
        except ConfigError as error:
            launch = f"(no launch command: {error})"
        self.query_one("#launch-text", Static).update(safe_text(launch))

    def current_text(self) -> str:
        if self.document is not None:
            return self.document.text
        return self.query_one("#raw", TextArea).text

    def unsaved_text(self) -> str | None:
        """The text with the user's edits when it differs from the saved file, else None."""
        candidates = []
        with contextlib.suppress(Exception):  # also called while the app is failing
            candidates.append(self.query_one("#raw", TextArea).text)
        if self.document is not None:
            candidates.append(self.document.text)
        return next((text for text in candidates if text != self.saved_text), None)

    def write_recovery_copy(self) -> str | None:
        """Write the unsaved text beside the file (or in the recovery folder); a note saying where."""
        text = self.unsaved_text()
        if text is None or not self.loaded:
            return None
        problems = []
        for target in (recovery_path(self.path), fallback_recovery_path(self.path)):
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")  # synchronous on purpose: the app is going down
            except OSError as error:
                problems.append(f"{target}: {error.strerror or error}")
                continue
            return (
                f"spectop: the editor failed; your unsaved edits of {self.path} were saved to {target} "
                f"(compare: diff {self.path} {target})"
            )
        return f"spectop: the editor failed and the unsaved edits could not be saved ({'; '.join(problems)})"

    def set_status(self, message: str, *, error: bool = False) -> None:
        status = self.query_one("#editor-status", Static)
        status.update(safe_line(message))  # it may quote the file's name, keys or values
        status.set_class(error, "-error")

    def _goto_line(self, line: int, column: int = 1) -> None:
        self.query_one(TabbedContent).active = "raw-pane"
        raw = self.query_one("#raw", TextArea)
        row = max(0, min(line - 1, raw.document.line_count - 1))
        raw.move_cursor((row, max(0, min(column - 1, len(raw.document.get_line(row))))), center=True)
        raw.focus()

    def _goto_syntax_error(self) -> None:
        error = self.syntax_error
        if error is None:
            return
        self._goto_line(error.line, error.column)
        self.set_status(_syntax_message(error), error=True)

    # --- edits ---------------------------------------------------------------------------------------------

    def on_config_field_edited(self, message: ConfigFieldEdited) -> None:
        message.stop()
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
            self.set_status(f"{dotted(path)}: valid; enter applies it")
            return True
        if self._undo and self._undo[-1].path == path and self._undo[-1].text_after == self.document.text:
            self._undo[-1].text_after = new_document.text  # typing on in one field is one change
        else:
            self._undo.append(_FieldChange(path, current, self.document.text, new_document.text))
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
            self.set_status(_syntax_message(error), error=True)
            if had_form:
                self.run_worker(self._build_form(), group="editor-form", exit_on_error=False)
            return
        had_form = self.document is not None
        unknown_before = unknown_keys(self.kind, self.document.data) if self.document is not None else None
        self._set_document(document, from_raw=True)
        self.set_status("raw text parses")
        if not had_form or unknown_keys(self.kind, document.data) != unknown_before:
            self.run_worker(self._build_form(), group="editor-form", exit_on_error=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id
        if option_id == "syntax":
            self._goto_syntax_error()
        elif option_id is not None and option_id.isdigit():
            finding = self.findings[int(option_id)]
            if finding.line:
                self._goto_line(finding.line)

    # --- actions -------------------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "save_restart":
            return self.restart_command is not None
        if action in ("copy_launch", "toggle_launch_format"):
            return self.query_one(TabbedContent).active == "launch"
        return True

    def action_show_tab(self, tab: str) -> None:
        tab_id = "raw-pane" if tab == "raw" else tab
        self.query_one(TabbedContent).active = tab_id
        targets = {
            "form": "#form-fields",
            "raw-pane": "#raw",
            "lint": "#lint-list",
            "launch": "#launch-scroll",
        }
        widget = self.query_one(targets[tab_id])
        if isinstance(widget, OptionList) and widget.highlighted is None and widget.option_count:
            widget.highlighted = 0  # enter on the first finding jumps to its line at once
        if tab_id == "form":
            rows = list(self._rows.values())
            if rows:
                rows[0].query_one("#value").focus()
                return
        widget.focus()

    def action_flip_view(self) -> None:
        self.action_show_tab("form" if self.query_one(TabbedContent).active == "raw-pane" else "raw")

    def action_undo(self) -> None:
        focused = self.focused
        if isinstance(focused, TextArea):
            if not focused.read_only:
                focused.undo()
            return
        if not self._undo or self.document is None:
            self.set_status("nothing to undo in the form")
            return
        change = self._undo.pop()
        path, value = change.path, change.value
        try:
            if self.document.text == change.text_after:
                # Nothing else changed since: restore the exact text (a removed key comes back in place).
                document = load_document(change.text_before, self.document.kind, self.path)
            elif value is MISSING:
                document = self.document.without(path) if self.document.has(path) else self.document
            else:
                document = self.document.with_value(path, value)
        except ConfigError as error:
            self.set_status(f"cannot undo {dotted(path)}: {error}", error=True)
            return
        row = self._rows.get(path)
        if row is not None:
            row.set_error(None)
        self._set_document(document)
        self.set_status(f"undid the change of {dotted(path)}")

    def action_copy_launch(self) -> None:
        if self.document is None:
            return
        try:
            document = self.document
            text = render_launch(document.kind, document.data, self.launch_format, multi_line=False)
        except ConfigError as error:
            self.set_status(str(error), error=True)
            return
        self.app.copy_to_clipboard(text)
        self.set_status("launch command copied to the clipboard (OSC 52)")

    def action_toggle_launch_format(self) -> None:
        self.launch_format = "yaml" if self.launch_format == "cli" else "cli"
        self._refresh_views()

    def has_unsaved_changes(self) -> bool:
        """Edits not written to the file, including text typed into a field but not yet applied."""
        if not self.loaded:
            return False
        pending = any(row.pending_text is not None for row in self._rows.values())
        return pending or self.unsaved_text() is not None

    def action_close(self) -> None:
        if self.has_unsaved_changes():
            self._ask_to_leave(quit_app=False)
        elif not self._leave_question_open:
            self.dismiss(None)

    def ask_before_quitting(self) -> bool:
        """The app's quit (ctrl+q, ctrl+c, the palette): True when the editor asks first."""
        if self._leave_question_open:
            return True  # the question is on screen already
        if not self.has_unsaved_changes():
            return False
        self._ask_to_leave(quit_app=True)
        return True

    def _ask_to_leave(self, *, quit_app: bool) -> None:
        if not self._leave_question_open:
            self._leave_question_open = True  # set at once: a second key must not ask twice
            self._leave(quit_app)

    @work(group="editor-leave", exit_on_error=False)
    async def _leave(self, quit_app: bool) -> None:
        """Close the editor (or quit the app) after asking: save, discard, or stay."""
        try:
            going = "Quit spectop" if quit_app else "Close the editor"
            question = f"{self.path} has unsaved changes. {going}?"
            answers = {"s": "save", "d": "discard", "n": ""}
            answer = await self.app.push_screen_wait(ConfirmDialog(question, answers))
            if answer is None:
                self.set_status("still editing: nothing was saved or discarded")
                return
            if answer == "save" and not await self._save_now():
                return
        finally:
            self._leave_question_open = False
        if quit_app:
            self.app.exit()
        else:
            self.dismiss(None)

    async def _save_now(self) -> bool:
        """Save without the diff (the user asked to save on the way out); False when it did not happen."""
        problem = self._blocking_issue()
        if problem is not None:
            self.set_status(problem, error=True)
            self.notify(safe_line(problem), severity="error", markup=False)
            return False
        assert self.document is not None
        if self.document.text == self.saved_text:
            return True
        return await self._write(self.document.text)

    def action_save(self) -> None:
        self.save_flow(restart=False)

    def action_save_restart(self) -> None:
        self.save_flow(restart=True)

    # --- saving --------------------------------------------------------------------------------------------

    def _blocking_issue(self) -> str | None:
        """Why the current text must not be saved (and where the cursor goes), or None."""
        if self.document is not None:
            invalid_field = self._commit_pending_fields()
            if invalid_field is not None:
                self.query_one(TabbedContent).active = "form"
                self._rows[invalid_field].query_one("#value").focus()
                return f"cannot save: {dotted(invalid_field)} holds an invalid value"
        if self.document is None:
            self._goto_syntax_error()
            return "cannot save: the file does not parse"
        try:
            saved = load_document(self.saved_text, self.document.kind, self.path)
        except ConfigSyntaxError:
            saved = None
        if saved is not None:
            problems = new_issues(saved, self.document)
        else:
            from tui.configs.schemas import validate_data

            problems = validate_data(self.document.kind, self.document.data)
        if problems:
            first = problems[0]
            line = self.document.line_of(first.path)
            if line:
                self._goto_line(line)
            return f"cannot save: {dotted(first.path)}: {first.message}"
        return None

    @work(exclusive=True, group="editor-save", exit_on_error=False)
    async def save_flow(self, restart: bool) -> None:
        problem = self._blocking_issue()
        if problem is not None:
            self.set_status(problem, error=True)
            self.notify(safe_line(problem), severity="error", markup=False)
            return
        assert self.document is not None and self.kind is not None
        text = self.document.text
        if text != self.saved_text:
            errors = [finding for finding in self.findings if finding.severity == "error"]
            summary = ""
            if errors:
                summary = f"{len(errors)} lint error(s): " + "; ".join(f.message for f in errors[:2])
            diff = unified_diff(self.saved_text, text, self.path.name)
            if not await self.app.push_screen_wait(DiffDialog(f"Save {self.path}?", diff, summary)):
                self.set_status("not saved")
                return
            if not await self._write(text):
                return
        elif not restart:
            self.set_status("no changes to save")
            return
        if restart and self.restart_command:
            question = f"Run the restart command?\n$ {shlex.join(self.restart_command)}"
            if await self.app.push_screen_wait(ConfirmDialog(question, {"y": "run", "n": ""})) != "run":
                return
            client = getattr(self.app, "http_client", None)
            dialog = RestartDialog(
                self.restart_command,
                self.health_url,
                client,
                log_file=self.log_file,
                health_timeout_s=self.health_timeout_s,
            )
            await self.app.push_screen(dialog)

    async def _write(self, text: str) -> bool:
        assert self.kind is not None
        force = False
        if await asyncio.to_thread(changed_on_disk, self.path, self.stamp):
            question = f"{self.path} changed on disk since you opened it."
            answers = {"o": "overwrite", "r": "reload (drop my edits)", "n": ""}
            answer = await self.app.push_screen_wait(ConfirmDialog(question, answers))
            if answer == "reload (drop my edits)":
                self.load_file()
                return False
            if answer != "overwrite":
                self.set_status("not saved: the file changed on disk")
                return False
            force = True
        try:
            result = await asyncio.to_thread(save_text, self.path, text, self.kind, self.stamp, force=force)
            self.stamp = result.stamp
        except ChangedOnDiskError as error:
            self.set_status(f"not saved: {error}", error=True)
            return False
        except (ConfigError, OSError) as error:
            self.set_status(f"not saved: {error}", error=True)
            self.notify(safe_line(f"not saved: {error}"), severity="error", markup=False)
            return False
        self.saved_text = text
        self._refresh_views()
        self.set_status(f"saved {self.path} (previous version: {self.path.name}{BACKUP_SUFFIX})")
        for warning in result.warnings:  # e.g. the owner could not be kept
            self.set_status(f"saved, but {warning}", error=True)
            self.notify(safe_line(warning), severity="warning", markup=False)
        return True
