"""The dashboard's autopilot (`o`): a dry run per endpoint whose state each card shows, and whose
proposal is a toast and a record; `o` again turns it off and the cards drop its line."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot

from tests.autopilot.conftest import kept_models
from tui.autopilot import audit, audit_file
from tui.autopilot.policy import Limits
from tui.settings import EndpointSettings, Settings
from tui.sim.supervisor import DemoSims
from tui.ui.app import SpectopApp
from tui.widgets.endpoint_card import EndpointCard


async def wait_until(pilot: Pilot[int], done: Callable[[], bool]) -> None:
    while not done():
        await pilot.pause(0.1)


async def test_the_cards_show_what_the_autopilot_would_do(one_sim: DemoSims) -> None:
    sim = one_sim.sims[0]
    found = sim.config.read_bytes()
    endpoint = EndpointSettings(
        name="one", url=sim.url, config_file=sim.config, restart_command=one_sim.restart_command("one")
    )
    app = SpectopApp(
        Settings(poll_interval_s=1, endpoints=[endpoint]),
        step_costs=kept_models(sim),
        remember_theme_choice=False,
        autopilot_limits=Limits(sustained_s=2, interval_s=1),
    )

    def shown() -> str:
        return app.screen.query_one(EndpointCard).data.autopilot or ""

    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.board.advice is not None)
        await pilot.press("o")
        await wait_until(pilot, lambda: any(r.outcome == "proposed" for r in audit.read(audit_file())[0]))
        assert shown().startswith("autopilot: watching · k=4 now · k=2 would be")
        assert any("(dry run: --auto to act)" in str(n.message) for n in app._notifications)
        await pilot.press("o")
        await wait_until(pilot, lambda: shown() == "")
        await wait_until(pilot, lambda: any(r.outcome == "left" for r in audit.read(audit_file())[0]))
    assert sim.config.read_bytes() == found
