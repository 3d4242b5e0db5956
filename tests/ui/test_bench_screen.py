"""The A/B burst screen in a tiny app that provides `http_client`, at 80x24, keyboard only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench_fixtures import (
    MTP_OFF,
    bench_on,
    bench_screen,
    mtp_burst,
    recorded_arm,
    recorded_burst,
    text_of,
    type_into,
    until,
)
from cut_figures import assert_nothing_injected
from test_themes import coloured
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import ContentSwitcher, DataTable, Footer, Input, Select
from textual.widgets._footer import FooterKey
from ui_waiting import press_into, press_then_pause, spectop, wait_for

from tests.bench.timed_server import Behaviour, TimedServer
from tests.untrusted import HOSTILE, hostile_burst
from tui.bench.burst_store import bursts_dir, list_bursts, save_burst
from tui.bench.client_settings import ClientSettings
from tui.bench.engine import ArmTarget, BurstConfig, run_burst
from tui.bench.prompts import load_prompt_set
from tui.bench.results import BurstResult
from tui.bench.session import EndpointArm, PastArm
from tui.screens.bench import NO_B, BenchScreen
from tui.settings import EndpointSettings
from tui.sim.per_request import ResponseOptions
from tui.sim.server import SimServer
from tui.widgets.edit_mode import OnOff
from tui.widgets.messages import BurstFailed

SLOW = Behaviour(ttft_s=0.02, interval_s=0.02, chunks=10)  # 9 tokens after the first in 180 ms
FAST = Behaviour(ttft_s=0.02, interval_s=0.02, chunks=5, tokens_per_chunk=2)  # ... in 80 ms: 2.25x


NOWHERE = EndpointSettings(name="x", url="http://127.0.0.1:9")  # nothing listens
pytestmark = pytest.mark.usefixtures("bench_folders")


def _endpoints(*servers: TimedServer) -> list[EndpointSettings]:
    pairs = zip(("mtp-off", "mtp-on"), servers, strict=False)
    return [EndpointSettings(name=name, url=server.base_url, model="m") for name, server in pairs]


async def _summary_after(pilot: Pilot[None], screen: BenchScreen, *keys: str) -> None:
    await pilot.press(*keys)
    await until(pilot, lambda: screen.summary is not None)


async def test_ab_burst_from_the_keyboard_shows_verdict_and_keeps_history(tmp_path: Path) -> None:
    with TimedServer(SLOW) as server_a, TimedServer(FAST) as server_b:
        async with bench_on(_endpoints(server_a, server_b)) as (pilot, screen):
            a, b = (screen.query_one(f"#{side}-select", Select).value for side in "ab")
            assert isinstance(a, EndpointArm) and a.name == "mtp-off" and a.base_url == server_a.base_url
            assert isinstance(b, EndpointArm) and b.name == "mtp-on"

            # A busy host can hold spectop's own client back: the burst then says so instead of giving a
            # verdict (by design), and the test runs it again, as a user would.
            async def burst() -> str:
                last = screen.summary
                await type_into(screen, pilot, "requests", "6")
                await pilot.press("enter")  # enter in a field starts the burst
                await until(pilot, lambda: screen.summary is not None and screen.summary is not last)
                return text_of(screen, "#verdict")

            runs, verdict = 1, await burst()
            while "CLIENT FELL BEHIND" in verdict and runs < 3:
                runs, verdict = runs + 1, await burst()
            table = screen.query_one("#results-table", DataTable)
            assert table.row_count >= 16
            assert table.get_row_at(0)[1:] == ["6", "6"]
            assert "B is" in verdict and "faster" in verdict  # 2 tokens per chunk at the same pace
            assert "6/6 identical" in verdict
            await until(pilot, lambda: screen.query_one("#history-table", DataTable).row_count == runs)
            await pilot.press("j")
            await until(pilot, lambda: "json written to" in text_of(screen, "#status"))
            assert "written to ./spectop-exports/spectop-burst-" in text_of(screen, "#status")
    assert len(list(tmp_path.glob("spectop-exports/spectop-burst-*.json"))) == 1  # one folder to ignore
    assert not list(tmp_path.glob("spectop-burst-*"))
    assert len(list_bursts()) == runs


async def test_two_past_bursts_are_compared_from_the_history() -> None:
    async with httpx.AsyncClient() as client:
        for behaviour in (SLOW, FAST):
            with TimedServer(behaviour) as server:
                arm = ArmTarget("srv", server.base_url, model="m", scrape_metrics=False)
                config = BurstConfig(a=arm, prompt_set=load_prompt_set("mixed"), requests=5, warmup=0)
                save_burst(await run_burst(config, client))
    async with bench_on([]) as (pilot, screen):
        await until(pilot, lambda: screen.query_one("#history-table", DataTable).row_count == 2)
        await pilot.press("h", "b", "down", "a")  # the history, newest (FAST) first: B, then A
        assert isinstance(screen.query_one("#a-select", Select).value, PastArm)
        assert isinstance(screen.query_one("#b-select", Select).value, PastArm)
        await _summary_after(pilot, screen, "ctrl+r")
        assert "faster" in text_of(screen, "#verdict")


async def test_escape_cancels_a_running_burst_and_leaves_no_previous_result() -> None:
    stalled = Behaviour(ttft_s=0.0, interval_s=0.0, chunks=10, stall_after_chunks=2)
    with TimedServer(FAST) as quick, TimedServer(stalled) as stuck:
        async with bench_on(_endpoints(quick, stuck)) as (pilot, screen):
            screen.query_one("#b-select", Select).value = NO_B
            await type_into(screen, pilot, "requests", "2")
            await _summary_after(pilot, screen, "enter")
            table = screen.query_one("#results-table", DataTable)
            assert table.row_count > 0 and "one arm" in text_of(screen, "#verdict")
            screen.query_one("#a-select", Select).value = EndpointArm.from_settings(pilot.app.endpoints[1])
            await pilot.press("ctrl+r")
            await until(pilot, lambda: len(stuck.records) > 0)  # the warm-up request is stuck
            started = asyncio.get_running_loop().time()
            await pilot.press("escape")
            await until(pilot, lambda: "cancelled" in text_of(screen, "#phase"))
            # Against the stalled stream's own timeout (a ratio, not a wall-clock limit): cancelled.
            assert asyncio.get_running_loop().time() - started < ClientSettings().timeout / 10
            assert not screen.running and pilot.app.screen is screen  # escape cancels, it does not leave
            assert table.row_count == 0  # not the previous burst's figures under "cancelled"
            assert text_of(screen, "#verdict") == "no result: the burst was cancelled"
            await pilot.press("j")
            assert "nothing to export" in text_of(screen, "#status")


async def test_retries_after_429_are_shown_live_and_in_the_table() -> None:
    limited = Behaviour(ttft_s=0.0, interval_s=0.0, chunks=3, first_attempt_status=429, retry_after="0")
    with TimedServer(limited) as server:
        async with bench_on(_endpoints(server)) as (pilot, screen):
            await type_into(screen, pilot, "requests", "3")
            await _summary_after(pilot, screen, "enter")
            assert "err 0   retry 3" in text_of(screen, "#live")
            rows = screen.query_one("#results-table", DataTable)
            expected = [["requests", "3"], ["errors", "0"], ["retries", "3"]]
            assert [rows.get_row_at(i)[:2] for i in range(3)] == expected


async def test_an_unreachable_arm_is_named_and_nothing_is_kept() -> None:
    gone = EndpointSettings(name="gone", url="http://127.0.0.1:1", model="m")
    async with bench_on([gone]) as (pilot, screen):
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "failed" in text_of(screen, "#phase"))
        reason = "arm A (gone) http://127.0.0.1:1 is not reachable: connection refused"
        assert reason in text_of(screen, "#status")
        assert screen.query_one("#results-table", DataTable).row_count == 0
    assert list_bursts() == []


async def test_rounds_warm_up_and_a_client_settings_file_from_the_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_UI_KEY", "sk-ui-secret")
    settings = tmp_path / "settings.json"
    with TimedServer(FAST) as server:
        values = {"base_url": server.base_url, "api_key_env": "BENCH_UI_KEY", "max_tokens": 5}
        settings.write_text(json.dumps({**values, "extra_body": {"top_k": 7}}), encoding="utf-8")
        async with bench_on(_endpoints(server)) as (pilot, screen):
            for field_id, value in (
                ("requests", "4"), ("rounds", "2"), ("warmup", "2"), ("max-tokens", ""),
                ("client-settings", str(settings)),
            ):  # fmt: skip
                await type_into(screen, pilot, field_id, value)
            await _summary_after(pilot, screen, "enter")
            records = list(server.records)
    assert screen.outcome is not None and screen.outcome.ran is not None
    kept = screen.outcome.ran.settings
    assert (kept.rounds, kept.warmup, kept.max_tokens) == (2, 2, 5)  # tok empty: the client settings'
    warm_up = [r for r in records if "-wa" in r.headers.get("x-request-id", "")]
    assert len(warm_up) == 2 and len(records) == 2 + 4
    assert {r.body["top_k"] for r in records} == {7}
    assert {r.headers["authorization"] for r in records} == {"Bearer sk-ui-secret"}


@pytest.mark.parametrize(
    ("field_id", "value", "message"),
    [
        ("requests", "abc", "n (requests): expected a whole number"),
        ("rounds", "0", "rounds: must be at least 1, got 0"),
        ("warmup", "x", "warm-up: expected a whole number, got 'x'"),
        ("temperature", "9", "T (temperature): must be at most 5"),
        ("client-settings", "/no/such/settings.json", "client settings: /no/such/settings.json: cannot read"),
        ("b-extra", '{"stream": false', "B fields:"),
    ],
)
async def test_a_bad_form_value_names_its_field(field_id: str, value: str, message: str) -> None:
    async with bench_on([NOWHERE]) as (pilot, screen):
        await type_into(screen, pilot, field_id, value)
        await pilot.press("enter")
        await until(pilot, lambda: message in text_of(screen, "#status"), timeout_s=5.0)
        assert screen.query_one("#status").has_class("error")


def _run(server: TimedServer, start: int) -> tuple[list[str], list[str]]:
    records = list(server.records)[start:]
    return [r.path for r in records], [r.headers.get("x-request-id", "") for r in records]


async def test_prime_flush_and_api_from_the_keyboard_change_the_burst_that_is_sent() -> None:
    with TimedServer(FAST) as server:
        async with bench_on(_endpoints(server)) as (pilot, screen):
            for field_id, value in (("requests", "2"), ("rounds", "1"), ("warmup", "0")):
                await type_into(screen, pilot, field_id, value)
            prime, flush = screen.query_one("#prime-cache", OnOff), screen.query_one("#flush-cache", OnOff)
            assert (str(prime.render()), str(flush.render())) == ("prime off", "flush off")
            await _summary_after(pilot, screen, "ctrl+r")  # as the form opens: chat, no priming, no flush
            paths, ids = _run(server, 0)
            assert paths == ["/v1/chat/completions"] * 2
            before = len(server.records)

            prime.focus()
            await pilot.press("space")
            assert "space on/off · each prompt once per arm" in text_of(screen, "#status")
            await pilot.press("tab", "space")  # on to flush
            assert flush.has_focus and (prime.value, flush.value) == (True, True)
            assert (str(prime.render()), str(flush.render())) == ("prime on ", "flush on ")  # not colour
            screen.query_one("#api-select", Select).focus()
            await pilot.press("enter", "down", "enter")  # chat -> completions
            assert screen.query_one("#api-select", Select).value == "completions"
            await _summary_after(pilot, screen, "ctrl+r")
            paths, ids = _run(server, before)
    assert paths[0] == "/reset_prefix_cache"  # flushed first, then primed, then measured
    assert [request_id.rsplit("-", 1)[-1] for request_id in ids[1:3]] == ["pa0", "pa1"]
    assert paths[1:] == ["/v1/completions"] * 4
    assert screen.outcome is not None and screen.outcome.ran is not None
    kept = screen.outcome.ran.settings
    assert (kept.api, kept.prime_cache, kept.flush_cache) == ("completions", True, True)
    assert screen.outcome.ran.arms[0].notes == [
        "prefix cache flushed (POST /reset_prefix_cache)",
        "prefix cache primed with the 2 prompts",
    ]


async def test_in_the_app_under_no_color_the_footer_keeps_the_keys_in_sight_toggles_read_on_and_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Opened with b on the dashboard; placeholders say "e.g." in words, not by italics alone."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = spectop(EndpointSettings(name="e", url="http://127.0.0.1:9"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query("EndpointCard")))
        await press_into(pilot, BenchScreen, "b")
        screen = bench_screen(app)
        screen.query_one("#results-table", DataTable).focus()
        footer = screen.query_one(Footer)
        await wait_for(
            pilot,
            lambda: any(key.key_display == "^p" and key.region.width for key in footer.query(FooterKey)),
        )
        keys = {key.key_display: key.region for key in footer.query(FooterKey)}
        palette = keys["^p"]
        for shown in ("esc", "^r", "h", "e", "j/c/m", "q", "?"):
            assert shown in keys and keys[shown].width > 0 and keys[shown].right <= palette.x, shown
        await press_then_pause(pilot, "b")  # the app's key: a second burst screen on top of this one
        assert pilot.app.screen is screen and "this is the burst screen" in text_of(screen, "#status")
        prime = screen.query_one("#prime-cache", OnOff)
        prime.focus()
        await press_then_pause(pilot, "space")
        strips = screen._compositor.render_strips()
        row = strips[prime.region.y]
        assert "prime on " in row.text and "flush off" in row.text
        toggle = row.crop(prime.region.x, prime.region.right)
        assert toggle.text == "prime on "
        assert all(s.style is not None and s.style.reverse for s in toggle)  # focus: reverse video
        assert coloured(strips) == []
        fields = ("a-extra", "b-extra", "slo", "client-settings")
        examples = {field.id: field.placeholder for field in screen.query(Input) if field.id in fields}
        assert len(examples) == 4 and all("e.g. " in str(text) for text in examples.values()), examples
        a_extra = screen.query_one("#a-extra", Input)  # on screen, at 80 columns where the field is narrow
        assert "e.g." in strips[a_extra.region.y].text  # the words come first


FIGURES = ResponseOptions(spec_metrics="summary", timing_metrics=True, prompt_tokens_details=True)


async def test_one_url_two_bodies_and_the_explain_view() -> None:
    async with SimServer(flavor="vllm", responses=FIGURES, speed=4.0) as sim:
        same = [
            EndpointSettings(name=name, url=sim.base_url, model=sim.model) for name in ("spec-on", "spec-off")
        ]
        async with bench_on(same) as (pilot, screen):
            await type_into(screen, pilot, "requests", "8")
            await type_into(screen, pilot, "max-tokens", "32")
            await type_into(screen, pilot, "a-extra", '{"enable_speculative": true}')
            await type_into(screen, pilot, "b-extra", '{"enable_speculative": false}')
            await type_into(screen, pilot, "slo", "ttft=2s,e2e=10s")
            await pilot.press("enter")
            await wait_for(
                pilot,
                lambda: screen.summary is not None or "failed" in text_of(screen, "#phase"),
                timeout_s=120,
            )
            assert screen.summary is not None, text_of(screen, "#status")
            table = screen.query_one("#results-table", DataTable)
            labels = [str(table.get_row_at(row)[0]) for row in range(table.row_count)]
            assert "decode tok/s pooled" in labels and "accept/req p10/50/90" in labels
            assert "goodput (SLO)" in labels and "TTFT server p50" in labels
            await pilot.press("e")
            assert screen.query_one("#switcher", ContentSwitcher).current == "explain"
            assert screen.query_one("#explain", VerticalScroll).has_focus
            explained = text_of(screen, "#explain-text")
            assert "A accept" in explained and "code" in explained and "prose" in explained
            assert "request fields (enable_speculative), not by server" in explained
            assert "/metrics:" in explained and "SLO TTFT ≤ 2 s, e2e ≤ 10 s" in explained
            await pilot.press("e")
            assert screen.query_one("#switcher", ContentSwitcher).current == "results"


FAR = EndpointSettings(name="far", url="http://inference-gpu-node-17.cluster.example.com:8443/v1")


def _cells(screen: BenchScreen, row: int) -> list[str]:
    return [str(cell) for cell in screen.query_one("#history-table", DataTable).get_row_at(row)]


def _keep_as_older_spectop(result: BurstResult) -> None:
    """`result` written as a spectop without kept verdicts wrote it (no verdict field)."""
    bursts_dir().mkdir(parents=True, exist_ok=True)
    path = bursts_dir() / f"burst-{result.started_at:%Y%m%d-%H%M%S-%f}.json"
    path.write_text(result.model_dump_json(exclude={"verdict"}), encoding="utf-8")


async def test_an_older_file_opens_with_its_verdict_and_the_history_refits_when_resized() -> None:
    _keep_as_older_spectop(mtp_burst())
    far = [recorded_arm("a", FAR, 1, 0.010, None)]
    save_burst(recorded_burst(far, started_at=datetime(2026, 11, 30, 3, 0, tzinfo=UTC)))
    async with bench_on([MTP_OFF], size=(200, 24)) as (pilot, screen):
        table = screen.query_one("#history-table", DataTable)
        await until(pilot, lambda: table.row_count == 2)
        await press_then_pause(pilot, "h")
        assert _cells(screen, 0)[1] == FAR.url
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: _cells(screen, 0)[1] != FAR.url)
        assert _cells(screen, 0)[1].endswith(":8443")
        await _summary_after(pilot, screen, "down", "enter")  # opening the older file computes its verdict
        assert "B is" in text_of(screen, "#verdict") and "faster" in text_of(screen, "#verdict")


async def test_more_bursts_than_rows_still_fit_beside_the_scroll_bar() -> None:
    for minute in range(20):
        arms = [recorded_arm("a", FAR, 1, 0.010, None), recorded_arm("b", FAR, 2, 0.012, 0.71)]  # both cut
        save_burst(recorded_burst(arms, started_at=datetime(2026, 11, 30, 4, minute, tzinfo=UTC)))
    async with bench_on([MTP_OFF]) as (pilot, screen):
        table = screen.query_one("#history-table", DataTable)
        await until(pilot, lambda: table.row_count == 20)
        await press_then_pause(pilot, "h")
        assert table.virtual_size.height > table.scrollable_content_region.height  # it scrolls down
        assert table.virtual_size.width <= table.scrollable_content_region.width  # and not sideways
        assert _cells(screen, 0)[1].endswith(":8443") and _cells(screen, 0)[3].startswith("B ")


def _hostile_url(burst: BurstResult) -> BurstResult:
    for arm in burst.arms:
        arm.url = f"http://e{HOSTILE}x:8000/v1"
    return burst


async def _show_status(pilot: Pilot[None], screen: BenchScreen) -> None:
    screen.post_message(BurstFailed(f"HTTP 500: {HOSTILE}"))


async def _show_burst(pilot: Pilot[None], screen: BenchScreen) -> None:
    await pilot.press("h", "enter")
    await wait_for(pilot, lambda: screen.summary is not None)


@pytest.mark.parametrize(
    ("burst", "width", "show", "selector", "expected"),
    [
        (lambda: hostile_burst(prompt_set=f"mix{HOSTILE}"), 100, "h", "#history-table", "mixevil"),
        (lambda: _hostile_url(hostile_burst()), 140, "h", "#history-table", "eevil"),
        (hostile_burst, 100, _show_burst, "#verdict", "first divergence in p0evil"),
        (hostile_burst, 100, _show_status, "#status", "HTTP 500: evil"),
    ],
    ids=["history-table", "history-url", "verdict", "status-line"],
)
async def test_nothing_from_a_kept_burst_or_a_server_error_reaches_the_terminal_raw(
    burst: Callable[[], BurstResult], width: int, show: Any, selector: str, expected: str
) -> None:
    save_burst(burst())
    async with bench_on([], size=(width, 30)) as (pilot, screen):
        await wait_for(pilot, lambda: screen.query_one("#history-table", DataTable).row_count == 1)
        await (pilot.press(show) if isinstance(show, str) else show(pilot, screen))
        await assert_nothing_injected(pilot, screen.query_one(selector), expected)
