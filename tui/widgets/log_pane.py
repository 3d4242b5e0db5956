"""The tail of an endpoint's log: prefixes cut to a short time, lines wrapped, figures and errors
highlighted, access lines hidden (h shows them), follow / pause, filter."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.widgets import RichLog

from tui.sanitize import safe_line
from tui.telemetry.logs.display import DisplayLine, display_line, figure_spans

if TYPE_CHECKING:
    from tui.board import LogEntry

PANE_MAX_LINES = 2000
MIN_WRAP_WIDTH = 20


class LogPane(RichLog):
    DEFAULT_CSS = """
    LogPane { height: 1fr; border: round $panel-lighten-2; overflow-x: hidden; }
    LogPane:focus { border: round $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("h", "toggle_access", "Access lines", tooltip="show / hide the HTTP access lines")
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(max_lines=PANE_MAX_LINES, wrap=True, markup=False, min_width=MIN_WRAP_WIDTH, id=id)
        self.filter_text = ""
        self.follow = True
        self.show_access = False
        self.hidden_access = 0
        self._entries: deque[tuple[LogEntry, DisplayLine]] = deque(maxlen=PANE_MAX_LINES)
        self._width = 0

    def _styles(self) -> dict[str, str]:
        theme = self.app.current_theme
        return {
            "error": f"bold {theme.error or 'red'}",
            "spec": theme.accent or "yellow",
            "stats": "",
            "plain": "",
            "figure": f"bold {theme.secondary or 'cyan'}",
            "head": "dim",
            "access": "dim",
        }

    def matches(self, entry: LogEntry, shown: DisplayLine) -> bool:
        if shown.access and not self.show_access:
            return False
        return not self.filter_text or self.filter_text in entry.line.lower()

    def styled(self, entry: LogEntry, shown: DisplayLine, styles: dict[str, str]) -> Text:
        """One entry as styled text: dim time/level, the message in its kind's style, figures bold."""
        head, message = safe_line(shown.head), safe_line(shown.message)
        if shown.access:
            return Text(head + message, style=styles["access"])
        text = Text(head, style=styles["head"])
        text.append(message, style=styles.get(entry.kind, ""))
        if entry.kind != "error" and len(message) == len(shown.message):  # spans index the unsanitised text
            offset = len(head)
            for start, end in figure_spans(message, named=entry.kind in ("stats", "spec")):
                text.stylize(styles["figure"], offset + start, offset + end)
        return text

    def add(self, entry: LogEntry) -> None:
        shown = display_line(entry.line)
        self._entries.append((entry, shown))
        if self.matches(entry, shown):
            self.write(self.styled(entry, shown, self._styles()), self._wrap_width(), scroll_end=self.follow)
        elif shown.access:
            self.hidden_access += 1
            self._update_title()

    def show(self, entries: Iterable[LogEntry]) -> None:
        """Redraw from the app's buffer (after a filter change or on opening)."""
        self._entries = deque(((entry, display_line(entry.line)) for entry in entries), maxlen=PANE_MAX_LINES)
        self._redraw()

    def _redraw(self) -> None:
        self.clear()
        styles = self._styles()
        self.hidden_access = 0
        width = self._wrap_width()
        for entry, shown in self._entries:
            if self.matches(entry, shown):
                self.write(self.styled(entry, shown, styles), width, scroll_end=False)
            elif shown.access:
                self.hidden_access += 1
        self._update_title()
        if self.follow:
            self.scroll_end(animate=False)

    def _wrap_width(self) -> int | None:
        """The pane's own width (the console's may be another), once it is known."""
        return max(MIN_WRAP_WIDTH, self.scrollable_content_region.width) if self._size_known else None

    def _update_title(self) -> None:
        text = "following" if self.follow else "paused (f to follow)"
        if self.filter_text:
            text = f"filter: {self.filter_text} · {text}"
        if self.show_access:
            text += " · access lines shown (h hides)"
        elif self.hidden_access:
            text += f" · {self.hidden_access} access lines hidden (h)"
        self.border_subtitle = text

    def on_resize(self, event: Resize) -> None:
        super().on_resize(event)
        if event.size.width != self._width:  # lines are wrapped when written: wrap them again
            first = self._width == 0
            self._width = event.size.width
            if not first and self._entries:
                self.call_after_refresh(self._redraw)  # once the new content width is laid out
        elif self.follow:  # shorter (the detail's GPU rows shown) or taller: a followed log shows its end
            self.call_after_refresh(self.scroll_end, animate=False)

    def action_toggle_access(self) -> None:
        self.show_access = not self.show_access
        self._redraw()

    def set_follow(self, follow: bool) -> None:
        self.follow = follow
        self.auto_scroll = follow
        self._update_title()
        if follow:
            self.scroll_end(animate=False)
