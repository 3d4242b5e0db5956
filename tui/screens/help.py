"""Every key, in one place."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str, str], ...] = (
    ("everywhere", "q", "quit"),
    ("everywhere", "?", "this help"),
    ("everywhere", "p", "pause / resume polling (or the replay)"),
    ("everywhere", "t", "next theme (remembered)"),
    ("everywhere", "s", "screenshot (SVG into the current folder)"),
    ("everywhere", "a", "alerts, active and past, with times"),
    ("everywhere", "b", "A/B burst bench"),
    ("everywhere", "ctrl+p", "command palette"),
    ("replay", "+ / -", "faster / slower"),
    ("dashboard", "↑ ↓ ← → tab", "move between endpoint cards"),
    ("dashboard", "enter", "detail screen of the card"),
    ("dashboard", "/", "filter cards by name"),
    ("dashboard", "e", "edit the endpoint's config file"),
    ("dashboard", "v", "table view ⇄ cards (by itself when cards do not fit)"),
    ("table", "< > i", "sort by the previous / next column, invert the order"),
    ("detail", "escape", "back to the dashboard"),
    ("detail", "1 2 3 / w", "chart window 1, 5, 30 min / next"),
    ("detail", "f", "follow the log / pause it"),
    ("detail", "/", "filter the log"),
    ("detail", "h", "show / hide access-log lines (GET /metrics …)"),
    ("detail", "e", "edit the endpoint's config file"),
)


def help_text() -> Content:
    lines: list[Content] = [Content.styled("spectop keys", "bold $accent"), Content("")]
    section = ""
    for where, key, what in KEYS:
        if where != section:
            section = where
            lines.append(Content.styled(where, "bold"))
        lines.append(Content.assemble("  ", (key.ljust(14), "bold $primary"), what))
    lines += [
        Content(""),
        Content.styled("Acceptance below the endpoint's threshold for a while → WARN;", "$text-muted"),
        Content.styled('below the critical level → CRIT. "–" means the backend lacks it.', "$text-muted"),
        Content.styled("escape, q or ? closes this help", "$text-muted"),
    ]
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen VerticalScroll {
        width: 74; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text())

    def action_close(self) -> None:
        self.dismiss()
