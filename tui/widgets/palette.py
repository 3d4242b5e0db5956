"""Card styles with theme variables resolved by Textual itself, kept per theme. An `auto N%` variable is made
concrete as Textual's CSS does it (its content styles drop the alpha)."""

from __future__ import annotations

from collections.abc import Mapping

from textual.color import Color, ColorParseError
from textual.content import Content, Span
from textual.markup import parse_style
from textual.style import Style


def _concrete(value: str, background: Color) -> str:
    """An `auto N%` variable as the colour Textual's CSS draws it on `background`; others unchanged."""
    if not value.startswith("auto"):
        return value
    colour = parse_style(value).foreground  # read directly, Textual keeps the alpha
    if colour is None or not colour.auto:
        return value
    return (background + background.get_contrast_text(colour.a)).hex


class Palette:
    """The card styles of one theme (`variables`: `App.theme_variables`)."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        try:
            background = Color.parse(variables.get("background", ""))
        except ColorParseError:
            background = Color(0, 0, 0)
        self._variables = {name: _concrete(value, background) for name, value in variables.items()}
        self._styles: dict[str, Style] = {}

    def style(self, style: str) -> Style:
        resolved = self._styles.get(style)
        if resolved is None:
            try:
                resolved = parse_style(style, self._variables)
            except Exception:  # as Textual does (`Widget._get_style`): a style it cannot read draws plain
                resolved = Style.null()
            self._styles[style] = resolved
        return resolved

    def apply(self, content: Content) -> Content:
        spans = [
            Span(span.start, span.end, self.style(span.style) if isinstance(span.style, str) else span.style)
            for span in content.spans
        ]
        return Content(content.plain, spans, content.cell_length)
