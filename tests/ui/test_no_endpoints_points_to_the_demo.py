"""`spectop` with no endpoint configured says how to give one, and that `spectop demo` needs none."""

from __future__ import annotations

from textual.widgets import Static
from ui_waiting import wait_for

from tui.settings import Settings
from tui.ui.app import SpectopApp


async def test_the_empty_dashboard_mentions_the_demo_at_80_columns() -> None:
    app = SpectopApp(Settings(), theme_folders=[], remember_theme_choice=False)
    async with app.run_test(size=(80, 24)) as pilot:
        empty = app.screen.query_one("#empty", Static)
        await wait_for(pilot, lambda: empty.display and empty.region.height > 0)
        shown = [
            "".join(segment.text for segment in app.screen._compositor.render_strips()[y]).strip()
            for y in range(empty.region.y, empty.region.bottom)
        ]
        text = " ".join(shown)
        assert "--endpoint URL" in text and "`spectop demo`" in text, shown
