"""`spectop demo` shows the fallback guard: mtp-on asks (at 50%, under its usual acceptance), mtp-off has
no guard, and the intro says how to lower mtp-on's acceptance through its `/sim/control`."""

from __future__ import annotations

import httpx

from tui.commands.demo import demo_sims, guard_hint


def test_the_demo_guards_mtp_on_and_says_how_to_lower_its_acceptance() -> None:
    with demo_sims(background_load_rps=0.0) as sims:
        endpoints = {endpoint.name: endpoint for endpoint in sims.endpoints}
        guarded = endpoints["mtp-on"]
        assert guarded.guard == "ask" and guarded.acceptance_threshold == 0.5
        assert guarded.config_file is not None and guarded.restart_command
        assert endpoints["mtp-off"].guard == "off"
        hint = guard_hint(sims)
        url = f"{guarded.url}/sim/control"
        assert url in hint and '{"acceptance": 0.5}' in hint
        response = httpx.post(url, json={"acceptance": 0.5}, timeout=5)  # what the hint tells the user to do
        assert response.status_code == 200 and response.json()["applied"] == {"acceptance": 0.5}
