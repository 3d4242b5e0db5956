"""The config editor's file: opening it, checking what would be saved, the diff, writing, restarting; and
where it keeps unsaved edits when it fails (beside the file, else the data folder)."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

from textual import work
from textual.widgets import Static, TabbedContent, TextArea

from tui.configs.atomic import BACKUP_SUFFIX, changed_on_disk, write_file
from tui.configs.document import dotted, load_document
from tui.configs.editing import (
    ChangedOnDiskError,
    OpenedConfig,
    new_issues,
    open_config_async,
    save_text,
    unified_diff,
)
from tui.configs.errors import ConfigError, ConfigSyntaxError
from tui.configs.kinds import KIND_TITLES
from tui.configs.schemas import validate_data
from tui.paths import user_data_dir
from tui.sanitize import safe_line, safe_text
from tui.screens.editor_form import EditorForm, short_path
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog

RECOVERY_SUFFIX = ".spectop-recovery"


def recovery_path(path: Path) -> Path:
    """Where unsaved edits of `path` go when the editor fails: `FILE.spectop-recovery` beside it."""
    return path.with_name(path.name + RECOVERY_SUFFIX)


def write_recovery(path: Path, text: str) -> str:
    """Write `text` (unsaved edits of `path`) beside it, else in `$XDG_DATA_HOME/spectop/recovery/`; a note
    saying where."""
    problems = []
    for target in (recovery_path(path), user_data_dir() / "recovery" / recovery_path(path).name):
        try:
            write_file(target, text)  # synchronous on purpose: the app is going down
        except OSError as error:
            problems.append(f"{target}: {error.strerror or error}")
            continue
        return (
            f"spectop: the editor failed; your unsaved edits of {path} were saved to {target} "
            f"(compare: diff {path} {target})"
        )
    return f"spectop: the editor failed and the unsaved edits could not be saved ({'; '.join(problems)})"


class EditorSaving(EditorForm):
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
            target = self._tab_focus_target("form")
            row = self._row_of(target)
            field = self._field_status(row, target) if row is not None else ""
            self.set_status(f"opened {self.path.name} ({KIND_TITLES[self.kind]}) · {field}")
            self._opening_focus = None if target is self.focused else target
            self.action_show_tab("form")
        recovery = recovery_path(self.path)
        if await asyncio.to_thread(recovery.exists):
            note = safe_line(f"unsaved edits from a failed session are in {recovery} (compare and delete it)")
            self.notify(note, severity="warning", timeout=15, markup=False)
        self.loaded = True

    async def _save_now(self) -> bool:
        """Save without the diff (the user asked to save on the way out); False when it did not happen."""
        if self._refused():
            return False
        assert self.document is not None
        if self.document.text == self.saved_text:
            return True
        return await self._write(self.document.text)

    def _refused(self) -> bool:
        """The current text must not be saved: said, and the cursor where it is wrong."""
        problem = self._blocking_issue()
        if problem is not None:
            self.set_status(problem, error=True)
            self.notify(safe_text(problem), severity="error", markup=False)
        return problem is not None

    def _blocking_issue(self) -> str | None:
        """Why the current text must not be saved (and where the cursor goes), or None."""
        if self.document is None:
            self._goto_syntax_error()
            return "cannot save: the file does not parse"
        invalid_field = self._commit_pending_fields()
        if invalid_field is not None:
            self.query_one(TabbedContent).active = "form"
            self._rows[invalid_field].query_one("#value").focus()
            return f"cannot save: {dotted(invalid_field)} holds an invalid value"
        try:
            saved = load_document(self.saved_text, self.document.kind, self.path)
            problems = new_issues(saved, self.document)
        except ConfigSyntaxError:
            problems = validate_data(self.document.kind, self.document.data)
        if problems:
            first = problems[0]
            if line := self.document.line_of(first.path):
                self._goto_line(line)
            return f"cannot save: {dotted(first.path)}: {first.message}"
        return None

    @work(exclusive=True, group="editor-save", exit_on_error=False)
    async def action_save(self, restart: bool = False) -> None:
        if self._refused():
            return
        assert self.document is not None and self.kind is not None
        text = self.document.text
        if text != self.saved_text:
            errors = [finding for finding in self.findings if finding.severity == "error"]
            summary = (
                f"{len(errors)} lint error(s): " + "; ".join(f.message for f in errors[:2]) if errors else ""
            )
            diff = unified_diff(self.saved_text, text, self.path.name)
            action = "save & restart" if restart and self.restart_command else "save"
            title = f"Save & restart: save {self.path}?" if action != "save" else f"Save {self.path}?"
            if not await self.app.push_screen_wait(DiffDialog(title, diff, summary, action=action)):
                self.set_status("not saved")
                return
            if not await self._write(text):
                return
        elif not restart:
            self.set_status("no changes to save")
            return
        if restart and self.restart_command:
            question = f"Save & restart: run the restart command?\n$ {shlex.join(self.restart_command)}"
            answers = {"y": "restart", "n": ""}
            if await self.app.push_screen_wait(ConfirmDialog(question, answers)) != "restart":
                return
            dialog = RestartDialog(
                self.restart_command,
                self.health_url,
                self.client,
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
        except (ConfigError, OSError) as error:
            self.set_status(f"not saved: {error}", error=True)
            if not isinstance(error, ChangedOnDiskError):  # a toast: all the lines of the error
                self.notify(safe_text(f"not saved: {error}"), severity="error", markup=False)
            return False
        self.saved_text = text
        self._refresh_views()
        backup = Path(os.path.realpath(self.path))  # a symlink's target is saved, its .bak beside it
        backup = backup.with_name(backup.name + BACKUP_SUFFIX)
        room = max(20, self.size.width - 2)
        said = f"saved {short_path(self.path, room // 2)} · previous version: "
        self.set_status(said + short_path(backup, room - len(said)))
        for warning in result.warnings:  # e.g. the owner could not be kept
            self.set_status(f"saved, but {warning}", error=True)
            self.notify(safe_line(warning), severity="warning", markup=False)
        return True
