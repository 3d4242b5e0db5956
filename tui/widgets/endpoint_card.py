"""One endpoint's card on the dashboard, drawn in its theme's card styles: theme variables resolved by
Textual itself, kept per theme (an `auto N%` variable made concrete as Textual's CSS does it)."""

from __future__ import annotations

from collections.abc import Mapping

from textual.color import Color, ColorParseError
from textual.content import Content, Span
from textual.events import Resize
from textual.markup import parse_style
from textual.reactive import reactive
from textual.style import Style
from textual.widget import Widget

from tui.widgets.card_view import CardData, card_lines


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


_palettes: dict[str, Palette] = {}


def palette_for(theme: str, variables: dict[str, str]) -> Palette:
    if theme not in _palettes:
        _palettes[theme] = Palette(variables)
    return _palettes[theme]


class EndpointCard(Widget, can_focus=True):
    """A focusable card; what it draws depends on its size alone (`card_lines`)."""

    DEFAULT_CSS = """
    EndpointCard { height: 5; border: round $panel-lighten-2; padding: 0 1; }
    EndpointCard { border-title-color: $foreground; border-title-style: bold; }
    EndpointCard.roomy { height: 9; }
    EndpointCard.gpu { height: 6; }
    EndpointCard.roomy.gpu { height: 10; }
    EndpointCard:focus { border: round $accent; }
    EndpointCard.alert-warning { border: round $warning; }
    EndpointCard.alert-critical { border: round $error; }
    EndpointCard.alert-warning:focus, EndpointCard.alert-critical:focus { border: double $accent; }
    """

    roomy: reactive[bool] = reactive(False)

    def __init__(self, data: CardData, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = data
        self._render_key: tuple[object, ...] | None = None
        self._apply_titles()

    @property
    def endpoint(self) -> str:
        return self.data.name

    def update_data(self, data: CardData) -> None:
        if (key := data.render_key()) == self._render_key:
            return  # nothing on the card would change: skip the redraw
        self._render_key = key
        self.data = data
        self._apply_titles()
        severities = {alert.severity for alert in data.alerts}
        self.set_class("critical" in severities, "alert-critical")
        self.set_class(severities == {"warning"}, "alert-warning")
        self.set_class(bool(data.gpu_line(80)), "gpu")  # one more row for the GPU line
        self.refresh()

    def watch_roomy(self, roomy: bool) -> None:
        self.set_class(roomy, "roomy")

    def on_resize(self, _event: Resize) -> None:
        self._apply_titles()

    def _apply_titles(self) -> None:
        # The peers' models come with the data: asking every other card made a refresh cost N x N.
        width = self.size.width or None
        self.border_title = Content(self.data.title(width - 4 if width else None))
        self.border_subtitle = self.data.status_content()

    def render(self) -> Content:
        width = max(10, self.content_size.width)
        lines = card_lines(self.data, width, self.content_size.height)
        palette = palette_for(self.app.theme, self.app.theme_variables)
        return palette.apply(Content("\n").join(lines))
