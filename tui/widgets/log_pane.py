"""The tail of an endpoint's log: spec-decode lines and errors highlighted, follow / pause, filter."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from rich.text import Text
from textual.widgets import RichLog

from tui.sanitize import safe_line

PANE_MAX_LINES = 2000


class LogLine(Protocol):
    @property
    def line(self) -> str: ...
    @property
    def kind(self) -> str: ...


class LogPane(RichLog):
    DEFAULT_CSS = """
    LogPane { height: 1fr; border: round $panel-lighten-2; overflow-x: hidden; }
    LogPane:focus { border: round $accent; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(max_lines=PANE_MAX_LINES, wrap=False, markup=False, highlight=False, id=id)
        self.filter_text = ""
        self.follow = True

    def _styles(self) -> dict[str, str]:
        theme = self.app.current_theme
        return {
            "error": f"bold {theme.error or 'red'}",
            "spec": theme.accent or "yellow",
            "stats": "dim",
            "plain": "",
        }

    def matches(self, entry: LogLine) -> bool:
        return not self.filter_text or self.filter_text in entry.line.lower()

    def add(self, entry: LogLine) -> None:
        if self.matches(entry):
            self.write(
                Text(safe_line(entry.line), style=self._styles().get(entry.kind, "")), scroll_end=self.follow
            )

    def show(self, entries: Iterable[LogLine]) -> None:
        """Redraw from the app's buffer (after a filter change or on opening)."""
        self.clear()
        styles = self._styles()
        for entry in entries:
            if self.matches(entry):
                self.write(Text(safe_line(entry.line), style=styles.get(entry.kind, "")), scroll_end=False)
        if self.follow:
            self.scroll_end(animate=False)

    def set_follow(self, follow: bool) -> None:
        self.follow = follow
        self.auto_scroll = follow
        self.border_subtitle = "following" if follow else "paused (f to follow)"
        if follow:
            self.scroll_end(animate=False)
