"""`spectop demo` shows the fallback guard: mtp-on asks below its config's `acceptance_threshold` (the demo's
copy says 0.5, and says so; one threshold, under its usual acceptance, shown with where it comes from),
mtp-off has no guard, and the intro says how to lower mtp-on's acceptance through its `/sim/control`."""

from __future__ import annotations

import json

import httpx

from tests.ui.ui_waiting import wait_for
from tui.commands.demo import GUARD_TRY, demo_app, demo_sims, guard_hint
from tui.configs import read_acceptance_threshold
from tui.format import fmt_rate
from tui.screens.detail import DetailScreen
from tui.widgets.figure_table import FigureTable


def test_the_demo_guards_mtp_on_and_says_how_to_lower_its_acceptance() -> None:
    with demo_sims(background_load_rps=0.0) as sims:
        endpoints = {endpoint.name: endpoint for endpoint in sims.endpoints}
        guarded = endpoints["mtp-on"]
        assert guarded.guard == "ask" and guarded.config_file is not None and guarded.restart_command
        assert endpoints["mtp-off"].guard == "off"
        hint = guard_hint(sims)
        url = f"{guarded.url}/sim/control"
        assert f"curl -d '{GUARD_TRY}' {url}" in hint
        response = httpx.post(url, content=GUARD_TRY, timeout=5)  # what the hint tells the user to do
        assert response.status_code == 200 and response.json()["applied"] == json.loads(GUARD_TRY)


async def test_the_demo_has_one_threshold_the_config_files_and_says_so() -> None:
    with demo_sims(background_load_rps=0.0) as sims:
        guarded = next(endpoint for endpoint in sims.endpoints if endpoint.name == "mtp-on")
        assert guarded.config_file is not None
        in_the_file = read_acceptance_threshold(guarded.config_file)
        assert in_the_file == 0.5 and "spectop demo" in guarded.config_file.read_text(encoding="utf-8")
        app = demo_app(sims)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.alerts.threshold_source("mtp-on") == "config.toml")
            assert app.alerts.threshold("mtp-on") == in_the_file  # what the alerts and the guard compare with
            assert app.card_data("mtp-on").threshold == in_the_file  # the card's acceptance colour
            await pilot.press("down", "enter")  # mtp-on's card, its detail
            await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen))
            table = app.screen.query_one(FigureTable)
            await wait_for(pilot, lambda: "threshold" in table.render().plain)
            shown = " ".join(table.render().plain.split())
            assert f"threshold {fmt_rate(in_the_file)} (config.toml)" in shown
