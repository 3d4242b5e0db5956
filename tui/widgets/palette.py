"""Theme variables ("$success", "$text-muted") resolved to concrete colours once per theme.

Textual resolves `$variables` in content styles on every render; for cards redrawn every second
on 16 endpoints that is most of the drawing cost, so cards resolve them once per theme here.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.color import Color, ColorParseError
from textual.content import Content, Span


class Palette:
    def __init__(self, variables: Mapping[str, str]) -> None:
        self._colours: dict[str, str] = {}
        background = self._parse(variables.get("background")) or Color(0, 0, 0)
        for name, value in variables.items():
            colour = self._parse(value)
            if colour is None and value.startswith("auto"):
                foreground = self._parse(variables.get("foreground")) or background.get_contrast_text()
                alpha = float(value.split()[1].rstrip("%")) / 100 if " " in value else 1.0
                colour = background.blend(foreground, alpha)
            if colour is not None:
                self._colours[name] = colour.hex
        self._styles: dict[str, str] = {}

    @staticmethod
    def _parse(value: str | None) -> Color | None:
        if not value:
            return None
        try:
            return Color.parse(value)
        except ColorParseError:
            return None

    def style(self, style: str) -> str:
        resolved = self._styles.get(style)
        if resolved is None:
            words = []
            for word in style.split():
                if word.startswith("$"):
                    word = self._colours.get(word[1:], "")
                if word:
                    words.append(word)
            resolved = self._styles[style] = " ".join(words)
        return resolved

    def apply(self, content: Content) -> Content:
        spans = [
            Span(span.start, span.end, self.style(span.style) if isinstance(span.style, str) else span.style)
            for span in content.spans
        ]
        return Content(content.plain, spans, content.cell_length)
