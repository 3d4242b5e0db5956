"""Theme files: shipped ones load, broken ones are reported and skipped, the choice is remembered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.color import ColorType
from textual.app import App, ComposeResult
from textual.color import Color
from textual.strip import Strip
from textual.widgets import Label, Static, Switch
from ui_waiting import Replayed, editing, press_then_pause

from tui.paths import themes_dir
from tui.state import remember_theme, remembered_theme, state_path
from tui.ui.themes import load_themes, next_theme
from tui.widgets.config_field import ConfigFieldRow
from tui.widgets.endpoint_card import EndpointCard, Palette


def test_shipped_themes_load_a_users_theme_replaces_one_of_the_same_name_and_next_wraps(
    tmp_path: Path,
) -> None:
    loaded = load_themes([themes_dir()])
    assert loaded.problems == []
    assert {"spectop-dark", "spectop-light", "spectop-high-contrast"} <= set(loaded.themes)
    assert loaded.themes["spectop-light"].dark is False
    (tmp_path / "dark.toml").write_text('name = "spectop-dark"\nprimary = "#FF0000"\n', encoding="utf-8")
    assert load_themes([themes_dir(), tmp_path]).themes["spectop-dark"].primary == "#FF0000"
    assert next_theme("b", ["a", "b"]) == "a"
    assert next_theme("zzz", ["a", "b"]) == "a"


def test_broken_theme_is_reported_with_file_and_field_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('name = "mine"\nprimary = "#112233"\n', encoding="utf-8")
    (tmp_path / "bad_colour.toml").write_text('name = "x"\nprimary = "not-a-colour"\n', encoding="utf-8")
    (tmp_path / "bad_toml.toml").write_text("name = \n", encoding="utf-8")
    (tmp_path / "missing.toml").write_text('name = "y"\n', encoding="utf-8")
    (tmp_path / "extra.toml").write_text('name = "t"\nprimary = "#000"\nsurprise = 1\n', encoding="utf-8")
    loaded = load_themes([tmp_path])
    assert list(loaded.themes) == ["mine"]
    problems = "\n".join(loaded.problems)
    assert "bad_colour.toml: field primary" in problems
    assert "bad_toml.toml: not valid TOML" in problems
    assert "missing.toml: field primary" in problems
    assert "extra.toml: field surprise" in problems


def test_choice_is_remembered_under_xdg_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert remembered_theme() is None
    assert remember_theme("spectop-light") is None
    assert state_path() == tmp_path / "spectop" / "state.json"
    assert remembered_theme() == "spectop-light"
    state_path().write_text("{broken", encoding="utf-8")
    assert remembered_theme() is None  # a broken state file is not fatal


def coloured(strips: list[Strip]) -> list[str]:
    """Every segment whose style carries a colour (anything but the terminal's default)."""
    return [
        f"{segment.text!r} {color}"
        for strip in strips
        for segment in strip
        for color in ((segment.style.color, segment.style.bgcolor) if segment.style else ())
        if color is not None and color.type is not ColorType.DEFAULT
    ]


def _screen_strips(app: App[Any]) -> list[Strip]:
    return app.screen._compositor.render_strips()


@pytest.fixture(params=[True, False], ids=["NO_COLOR", "colour"])
def no_color(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.delenv("NO_COLOR", raising=False)
    if request.param:
        monkeypatch.setenv("NO_COLOR", "1")
    return bool(request.param)


async def test_dashboard_and_detail_are_colourless_exactly_under_no_color(
    replayed: Replayed, no_color: bool
) -> None:
    async with replayed() as (pilot, app):
        await pilot.pause()
        assert (coloured(_screen_strips(app)) == []) is no_color
        card = app.screen.query(EndpointCard).first()
        assert card.has_focus, app.focused
        top_left = _screen_strips(app)[card.region.y].text[card.region.x]
        assert (top_left == "┏") is no_color  # under NO_COLOR focus is a heavy border, not a shade of grey
        if no_color:
            await press_then_pause(pilot, "enter")
            assert coloured(_screen_strips(app)) == []


async def test_switches_say_on_and_off_and_placeholders_are_italic(config_toml: Path, no_color: bool) -> None:
    async with editing(config_toml) as (pilot, screen):
        row = screen.query_one("#field-speculative--enabled", ConfigFieldRow)
        state = row.query_one("#unset", Label)
        assert str(state.render()).strip() == "on"
        unset = screen.query_one("#field-model--trust_remote_code", ConfigFieldRow)
        assert str(unset.query_one("#unset", Label).render()).strip() == "off (not set)"
        switch = row.query_one(Switch)
        switch.focus()
        await press_then_pause(pilot, "space")
        assert str(state.render()).strip() == "off"
        if no_color:
            assert coloured(_screen_strips(pilot.app)) == []
            # a placeholder ("(not set)") is in italics: without colour it looked exactly like typed text
            y = screen.query_one("#field-model--served_model_name Input").region.y
            segments = [segment for segment in _screen_strips(pilot.app)[y] if "(not set)" in segment.text]
            assert segments and all(
                segment.style is not None and segment.style.italic for segment in segments
            )


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
