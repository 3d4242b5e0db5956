"""The dashboard (driven with Pilot, 80x24) watching the four real llama-servers under steady traffic."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from llama_server import LlamaServer
from llama_spectop import dashboard
from llama_workload import acceptance_lines, log_size, traffic_request
from vllm_workload import steady_load

from tests.ui.ui_waiting import wait_for
from tui.format import fmt_rate
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.ui.app import SpectopApp
from tui.widgets.endpoint_card import EndpointCard

pytestmark = pytest.mark.llamacpp

KINDS = ("nodraft", "same", "noisy", "random")


def dashboard_settings(servers: dict[str, LlamaServer], names: tuple[str, ...]) -> Settings:
    endpoints = [
        EndpointSettings(
            name=name, url=servers[name].url, backend="llamacpp", log_file=servers[name].log_file
        )
        for name in names
    ]
    return Settings(
        poll_interval_s=0.5, window_s=8.0, alerts=AlertSettings(sustained_s=1.0), endpoints=endpoints
    )


def card_state(app: SpectopApp, name: str) -> tuple[str, float | None, set[str]]:
    """What one card shows, with the reading and alerts it was drawn from (the app may already hold newer)."""
    card = next(card for card in app.screen.query(EndpointCard) if card.endpoint == name)
    return str(card.render()), card.data.figures.acceptance_rate, {alert.kind for alert in card.data.alerts}


def acceptance_of(app: SpectopApp, name: str) -> float | None:
    reading = app.readings.get(name)
    return reading.figures.acceptance_rate if reading is not None and reading.up else None


def alert_kinds(app: SpectopApp, name: str) -> set[str]:
    return {alert.kind for alert in app.alerts.active(name)}


async def test_dashboard_shows_each_servers_acceptance_and_alerts_on_the_random_draft(
    llama_servers: dict[str, LlamaServer],
) -> None:
    offsets = {kind: log_size(llama_servers[kind].log_file) for kind in KINDS}
    app = dashboard(dashboard_settings(llama_servers, KINDS))
    async with app.run_test(size=(80, 24)) as pilot:
        with steady_load([llama_servers[kind].url for kind in KINDS], concurrency=1, send=traffic_request):
            await wait_for(
                pilot,
                lambda: (
                    all(card_state(app, kind)[1] is not None for kind in ("same", "noisy", "random"))
                    and "acceptance_critical" in card_state(app, "random")[2]
                    and "acceptance_low" in card_state(app, "noisy")[2]
                ),
                "acceptance on every drafting card, a critical alert on the random draft and a warning "
                "on the noisy one (about 0.4, below the default 0.6)",
                timeout_s=120,
            )
            states = {kind: card_state(app, kind) for kind in KINDS}
            texts = {kind: state[0] for kind, state in states.items()}
            rates = {kind: state[1] for kind, state in states.items()}
            alerts = {kind: state[2] for kind, state in states.items()}
            cards = [card.endpoint for card in app.screen.query(EndpointCard)]

    assert cards == list(KINDS)
    # Identical draft: every draft token accepted, as its log says.
    assert all(line.rate == 1.0 for line in acceptance_lines(llama_servers["same"].log_file, offsets["same"]))
    assert rates["same"] == 1.0
    # The card speaks the one figure vocabulary (tui/format.py): rates as percent, lengths with two decimals.
    assert re.search(r"accept\s+100%", texts["same"]) and "len 9.00" in texts["same"], texts["same"]
    # Noisy draft: the window's rate lies between the lowest and highest per-request rate the log shows.
    noisy_lines = acceptance_lines(llama_servers["noisy"].log_file, offsets["noisy"])
    noisy = rates["noisy"]
    assert noisy is not None
    lowest, highest = min(line.rate for line in noisy_lines), max(line.rate for line in noisy_lines)
    assert lowest - 1e-5 <= noisy <= highest + 1e-5
    assert re.search(rf"accept\s+{re.escape(fmt_rate(noisy))}", texts["noisy"]), texts["noisy"]
    assert "WARN" in texts["noisy"] and alerts["noisy"] == {"acceptance_low"}, texts["noisy"]
    # Random draft: acceptance near 0, a critical alert on the card.
    random_rate = rates["random"]
    assert random_rate is not None and random_rate < 0.05
    assert "acceptance_critical" in alerts["random"]
    assert "CRIT" in texts["random"], texts["random"]
    # No draft: acceptance unknown (a dash, never 0) and no alert.
    assert rates["nodraft"] is None
    assert re.search(r"accept\s+–", texts["nodraft"]), texts["nodraft"]
    assert alerts["same"] == set() and alerts["nodraft"] == set()
    assert rates["same"] > noisy > random_rate


async def test_killed_server_shows_down_then_is_picked_up_again_after_restart(
    make_server: Callable[[str], LlamaServer],
) -> None:
    server = make_server("same")
    app = dashboard(dashboard_settings({"victim": server}, ("victim",)))
    async with app.run_test(size=(80, 24)) as pilot:
        with steady_load([server.url], concurrency=1, send=traffic_request):
            await wait_for(pilot, lambda: acceptance_of(app, "victim") == 1.0, "acceptance 1.00 while up")
            server.kill()
            await wait_for(
                pilot,
                lambda: (
                    app.readings["victim"].up is False
                    and "down" in alert_kinds(app, "victim")
                    and "CRIT" in card_state(app, "victim")[0]
                ),
                "the killed server reported down on its card",
            )
            down_text = card_state(app, "victim")[0]
            server.start(port=server.port)
            await wait_for(
                pilot,
                lambda: (
                    app.readings["victim"].up
                    and acceptance_of(app, "victim") == 1.0
                    # The card's vocabulary (tui/format.py): "accept 100%" compact, "acceptance 100%" roomy.
                    and re.search(
                        rf"accept(ance)?\s+{re.escape(fmt_rate(1.0))}", card_state(app, "victim")[0]
                    )
                    and "CRIT" not in card_state(app, "victim")[0]
                ),
                "the restarted server up again with its acceptance on the card",
            )
            up_text = card_state(app, "victim")[0]
            up_notes = app.readings["victim"].figures.notes
            rates_seen = app.series.endpoint("victim").values("generation_tokens_per_s")
    assert "CRIT" in down_text, down_text
    assert "down" not in alert_kinds(app, "victim")
    assert "CRIT" not in up_text, up_text
    # The restarted server's /slots is read again at once: refused only while the whole server was down.
    assert "/slots" not in up_notes.get("generation_tokens_per_s", ""), up_notes
    # The restart reset the server's counters: a new baseline, never a negative rate.
    assert rates_seen and all(value is None or value >= 0 for value in rates_seen)
