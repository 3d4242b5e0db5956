"""NO_COLOR: no colour codes at all, focus visible without colour, switches say on / off."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.color import ColorType
from textual.app import App
from textual.strip import Strip
from textual.widgets import Label, Switch
from ui_waiting import opened_editor, wait_for

from tui.ui.app import SpectopApp
from tui.ui.editor_app import EditorApp
from tui.widgets.config_field import ConfigFieldRow
from tui.widgets.endpoint_card import EndpointCard


def _coloured(strips: list[Strip]) -> list[str]:
    """Every segment whose style carries a colour (anything but the terminal's default)."""
    found = []
    for strip in strips:
        for segment in strip:
            style = segment.style
            if style is None:
                continue
            for color in (style.color, style.bgcolor):
                if color is not None and color.type is not ColorType.DEFAULT:
                    found.append(f"{segment.text!r} {color}")
    return found


def _screen_strips(app: App[Any]) -> list[Strip]:
    return app.screen._compositor.render_strips()


async def test_dashboard_and_detail_have_no_colour_under_no_color(
    monkeypatch: pytest.MonkeyPatch, replay_app: Callable[..., SpectopApp]
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = replay_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.replay_done)
        await pilot.pause()
        assert _coloured(_screen_strips(app)) == []
        card = app.screen.query(EndpointCard).first()
        assert card.has_focus, app.focused
        top_left = _screen_strips(app)[card.region.y].text[card.region.x]
        assert top_left == "┏"  # focus is a heavy border, not a shade of grey
        await pilot.press("enter")
        await pilot.pause()
        assert _coloured(_screen_strips(app)) == []


async def test_with_colour_the_app_keeps_its_colours(
    monkeypatch: pytest.MonkeyPatch, replay_app: Callable[..., SpectopApp]
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    app = replay_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.replay_done)
        await pilot.pause()
        assert _coloured(_screen_strips(app))
        card = app.screen.query(EndpointCard).first()
        assert _screen_strips(app)[card.region.y].text[card.region.x] != "┏"  # the NO_COLOR CSS is not loaded


@pytest.mark.parametrize("no_color", [True, False])
async def test_switches_say_on_and_off(
    config_toml: Path, monkeypatch: pytest.MonkeyPatch, no_color: bool
) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    app = EditorApp(config_toml)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened_editor(pilot)
        row = app.screen.query_one("#field-speculative--enabled", ConfigFieldRow)
        state = row.query_one("#unset", Label)
        assert str(state.render()).strip() == "on"
        unset = app.screen.query_one("#field-model--trust_remote_code", ConfigFieldRow)
        assert str(unset.query_one("#unset", Label).render()).strip() == "off (not set)"
        switch = row.query_one(Switch)
        switch.focus()
        await pilot.press("space")
        await pilot.pause()
        assert str(state.render()).strip() == "off"
        if no_color:
            assert _coloured(_screen_strips(app)) == []


async def test_a_placeholder_does_not_read_as_a_value_under_no_color(
    config_toml: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without colour a placeholder (the burst form's A+ example, the editor's "(not set)") looked exactly
    like typed text; it is in italics."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = EditorApp(config_toml)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened_editor(pilot)
        await pilot.pause()
        field = app.screen.query_one("#field-model--served_model_name Input")
        y = field.region.y
        segments = [segment for segment in _screen_strips(app)[y] if "(not set)" in segment.text]
        assert segments and all(segment.style is not None and segment.style.italic for segment in segments)
        assert _coloured(_screen_strips(app)) == []
