"""`T` on a dashboard card opens the tune screen for that endpoint (or says what it needs)."""

from __future__ import annotations

from pathlib import Path

from tui.settings import EndpointSettings, Settings
from tui.ui.app import SpectopApp


async def test_t_opens_the_tune_screen_of_the_focused_endpoint(config_toml: Path) -> None:
    from tui.screens.tune import TuneScreen

    config = config_toml
    endpoint = EndpointSettings(
        name="gpu1", url="http://127.0.0.1:9", config_file=config, restart_command=["true"]
    )
    bare = EndpointSettings(name="bare", url="http://127.0.0.1:9")
    app = SpectopApp(Settings(endpoints=[endpoint, bare]), remember_theme_choice=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        assert isinstance(app.screen, TuneScreen)
        assert app.screen.endpoint.name == "gpu1"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TuneScreen)
        await pilot.press("down", "T")
        await pilot.pause()
        assert not isinstance(app.screen, TuneScreen)  # no config file nor restart command: said, not opened
