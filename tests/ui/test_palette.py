"""Card styles resolve their theme variables exactly as Textual's CSS draws them (every shipped theme)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.color import Color
from textual.widgets import Static

from tui.paths import themes_dir
from tui.ui.themes import load_themes
from tui.widgets.palette import Palette

THEMES = load_themes([themes_dir()]).themes
# The variables the cards' styles name (tui/widgets/card_view.py and format.py).
NAMES = ("text-muted", "text", "success", "warning", "error", "accent", "primary")


class _Probe(App[None]):
    """One Static per variable, drawn with `color: $name` on the theme's `$background`."""

    CSS = "Static { background: $background; }\n" + "\n".join(
        f"#{name} {{ color: ${name}; }}" for name in NAMES
    )

    def compose(self) -> ComposeResult:
        for name in NAMES:
            yield Static("x", id=name)


@pytest.mark.parametrize("theme", sorted(THEMES))
async def test_palette_colours_are_textuals_css_colours(theme: str) -> None:
    app = _Probe()
    for loaded in THEMES.values():
        app.register_theme(loaded)
    async with app.run_test() as pilot:
        app.theme = theme
        await pilot.pause()
        palette = Palette(app.theme_variables)
        for name in NAMES:
            drawn = app.query_one(f"#{name}", Static).rich_style  # what the terminal shows for `color: $name`
            assert drawn.color is not None and drawn.bgcolor is not None
            background = Color.from_rich_color(drawn.bgcolor)
            resolved = palette.style(f"${name} bold")
            assert resolved.foreground is not None and not resolved.foreground.auto, name
            assert (background + resolved.foreground).hex == Color.from_rich_color(drawn.color).hex, name
            assert resolved.bold


async def test_unknown_variables_draw_plain_and_styles_are_kept_per_palette() -> None:
    app = _Probe()
    async with app.run_test():
        palette = Palette(app.theme_variables)
        assert palette.style("$no-such-variable").foreground is None
        assert palette.style("$error bold reverse") is palette.style("$error bold reverse")
        assert palette.style("$error bold reverse").reverse
