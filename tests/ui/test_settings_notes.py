"""What spectop assumed about the settings (a URL given without its scheme) is said in the dashboard."""

from __future__ import annotations

from pathlib import Path

from ui_waiting import wait_for

from tui.settings import parse_settings
from tui.ui.app import SpectopApp


async def test_the_dashboard_says_http_was_added_to_a_url_without_scheme(tmp_path: Path) -> None:
    path = tmp_path / "spectop.toml"
    settings = parse_settings('poll_interval_s = 60\n[[endpoints]]\nname = "a"\nurl = "127.0.0.1:9"\n', path)
    assert settings.notes  # nothing listens on port 9: the card is down, the note is what is read here
    app = SpectopApp(settings, remember_theme_choice=False)
    async with app.run_test(size=(80, 24)) as pilot:

        def said() -> bool:
            return any("using http://127.0.0.1:9" in note.message for note in app._notifications)

        await wait_for(pilot, said)
