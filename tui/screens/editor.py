"""The config editor: the schema's form (F2), the raw text (F3), lint (F4) and the launch command (F5).
Closing or quitting with unsaved changes asks save / discard / cancel."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.events import DescendantFocus
from textual.widgets import OptionList, Static, TabbedContent, TabPane, TextArea

from tui.configs.document import dotted, load_document
from tui.configs.errors import ConfigError
from tui.configs.launch import render_launch
from tui.sanitize import safe_line
from tui.screens.editor_saving import EditorSaving, write_recovery
from tui.widgets.config_dialogs import ConfirmDialog
from tui.widgets.config_field import MISSING
from tui.widgets.edit_mode import EDITING_HINT, FieldInput, RawTextArea
from tui.widgets.footer import Footer
from tui.widgets.messages import ReportsWorkerFailures

FIELD_KEYS = "the field below / above (the form scrolls to it)"
PAGE_KEYS = "a page of fields down / up"


class EditorScreen(ReportsWorkerFailures, EditorSaving):
    DEFAULT_CSS = """
    EditorScreen #editor-title { height: 1; background: $primary; color: $text; padding: 0 1; }
    EditorScreen #editor-status { height: auto; min-height: 1; max-height: 3; padding: 0 1; }
    EditorScreen #editor-status { color: $text-muted; }
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
        Binding("ctrl+r", "save(True)", "save & restart", priority=True),
        Binding("f4", "show_tab('lint')", "lint"),
        Binding("f5", "show_tab('launch')", "launch"),
        Binding("ctrl+z", "undo", "undo", priority=True),
        Binding("ctrl+o", "flip_view", "form/raw"),
        Binding("f2", "show_tab('form')", "form", show=False),
        Binding("f3", "show_tab('raw')", "raw", show=False),
        Binding("c", "copy_launch", "copy"),
        Binding("y", "toggle_launch_format", "cli/yaml"),
        Binding("escape", "close", "close"),
        # Before the form's scrolling and a choice's own down (which opens it): as in any terminal form.
        Binding("down", "next_field(1)", "next field", show=False, priority=True, tooltip=FIELD_KEYS),
        Binding("up", "next_field(-1)", "previous field", show=False, priority=True, tooltip=FIELD_KEYS),
        Binding("pagedown", "next_field(1, True)", "page down", show=False, priority=True, tooltip=PAGE_KEYS),
        Binding("pageup", "next_field(-1, True)", "page up", show=False, priority=True, tooltip=PAGE_KEYS),
    ]

    def compose(self) -> ComposeResult:
        yield Static(safe_line(f"{self.path} · loading…"), id="editor-title", markup=False)
        with TabbedContent(initial="form"):
            with TabPane("Form", id="form"):
                yield VerticalScroll(id="form-fields")
            with TabPane("Raw", id="raw-pane"):
                yield RawTextArea.code_editor("", id="raw", soft_wrap=False)
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

    def on_unmount(self) -> None:
        # An unhandled exception unmounts every screen on the way out: keep the unsaved text now.
        if self.app.return_code not in (None, 0):
            note = self.write_recovery_copy()
            if note and self._keep_recovery_note is not None:
                self._keep_recovery_note(note)

    def write_recovery_copy(self) -> str | None:
        """Write the unsaved text beside the file (or in the recovery folder); a note saying where."""
        text = self.unsaved_text()
        return None if text is None or not self.loaded else write_recovery(self.path, text)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        widget = event.widget
        opening, self._opening_focus = self._opening_focus, None
        status = self.query_one("#editor-status", Static)
        error = str(status.render()) if status.has_class("-error") else ""
        if widget is opening or not self.loaded:
            return  # the opening status says it (and names the field)
        row = self._row_of(widget)
        if row is not None:
            if dotted(row.spec.path) not in error:  # an error about this field (cannot save) stays
                self.set_status(self._field_status(row, widget))
        elif isinstance(widget, RawTextArea) and not widget.editing and not error:
            self.set_status("raw text: enter or i edits the text · esc stops")

    def on_field_input_started(self, message: FieldInput.Started) -> None:
        if (row := self._row_of(message.field)) is not None:
            self.set_status(f"editing {dotted(row.spec.path)}: {EDITING_HINT}")

    def on_field_input_cancelled(self, message: FieldInput.Cancelled) -> None:
        if (row := self._row_of(message.field)) is None:
            return
        if row.pending_text is None:
            row.set_error(None)  # the text is the document's value again
        else:  # what the field held before this edit (an earlier invalid value) is checked again
            self.apply_field(row.spec.path, message.field.value, commit=False)
        self.set_status(f"{dotted(row.spec.path)}: edit cancelled, nothing changed")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id
        if option_id == "syntax":
            self._goto_syntax_error()
        elif option_id is not None and option_id.isdigit():
            finding = self.findings[int(option_id)]
            if finding.line:
                self._goto_line(finding.line)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_field":
            return self.focused is not None and self._row_of(self.focused) is not None
        if action == "save" and parameters == (True,):  # save & restart
            return self.restart_command is not None
        if action in ("copy_launch", "toggle_launch_format"):
            return self.query_one(TabbedContent).active == "launch"
        return True

    def action_next_field(self, step: int, page: bool = False) -> None:
        """Focus the field `step` rows (or pages) below (above when negative), scrolled into view with its
        section's title; the form scrolls only with the focus."""
        form = self.query_one("#form-fields", VerticalScroll)
        rows = list(self._rows.values())
        current = self._row_of(self.focused) if self.focused is not None else None
        if current not in rows:
            return
        if current is rows[-1 if step > 0 else 0]:
            form.scroll_to(y=form.max_scroll_y if step > 0 else 0, animate=False, immediate=True)
            return
        step *= max(1, form.size.height // 3) if page else 1  # a row is two lines or more
        row = rows[max(0, min(len(rows) - 1, rows.index(current) + step))]
        # At once (focus() waits its turn): keys typed right after the arrow go to the field it chose.
        self.set_focus(row.query_one("#value"), scroll_visible=False)
        position = form.children.index(row)
        if position and form.children[position - 1].has_class("section"):
            form.scroll_to_widget(form.children[position - 1], animate=False, immediate=True)
        form.scroll_to_widget(row, animate=False, immediate=True)

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
        if (row := self._rows.get(path)) is not None:
            row.set_error(None)
        self._set_document(document)
        self.set_status(f"undid the change of {dotted(path)}")

    def action_copy_launch(self) -> None:
        if self.document is None:
            return
        try:
            text = render_launch(self.document.kind, self.document.data, self.launch_format, multi_line=False)
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
