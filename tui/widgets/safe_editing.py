"""Editing widgets that never draw a control character: the text keeps it, the terminal never sees it.

A config file is untrusted: a value may hold ESC (TOML and JSON can spell it `\\u001b`), and a file with raw
control bytes opens in the raw view. Textual's Input and TextArea draw such characters as they are, so the
terminal would act on them. These subclasses drop them from each drawn line (`tui.sanitize.drop_controls`:
they are zero-width, so the cursor and the layout stay where the widget measured them).
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Input, TextArea

from tui.sanitize import drop_controls


def safe_strip(strip: Strip) -> Strip:
    """`strip` with control characters dropped from its text (the same cells)."""
    segments = list(strip)
    if all(segment.text.isprintable() for segment in segments):
        return strip
    return Strip(
        [Segment(drop_controls(text), style, control) for text, style, control in segments],
        strip.cell_length,
    )


class SafeInput(Input):
    def render_line(self, y: int) -> Strip:
        return safe_strip(super().render_line(y))


class SafeTextArea(TextArea):
    def render_line(self, y: int) -> Strip:
        return safe_strip(super().render_line(y))
