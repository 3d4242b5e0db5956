"""The burst screen explains a burst: per-request figures from simulated servers, one URL with two request
bodies, SLOs, and the explain view (categories, distribution, /metrics), at 80x24, keyboard only."""

from __future__ import annotations

import pytest
from bench_fixtures import BenchTestApp, bench_screen, text_of, type_into
from textual.containers import VerticalScroll
from textual.widgets import ContentSwitcher, DataTable
from ui_waiting import wait_for

from tui.settings import EndpointSettings
from tui.sim.per_request import ResponseOptions
from tui.sim.server import SimServer

FIGURES = ResponseOptions(spec_metrics="summary", timing_metrics=True, prompt_tokens_details=True)


pytestmark = pytest.mark.usefixtures("bench_folders")


async def test_one_url_two_bodies_and_the_explain_view() -> None:
    async with SimServer(flavor="vllm", responses=FIGURES, speed=4.0) as sim:
        same = [
            EndpointSettings(name=name, url=sim.base_url, model=sim.model) for name in ("spec-on", "spec-off")
        ]
        app = BenchTestApp(same)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = bench_screen(app)
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


async def test_a_bad_arm_field_names_it() -> None:
    app = BenchTestApp([EndpointSettings(name="x", url="http://127.0.0.1:9")])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = bench_screen(app)
        await type_into(screen, pilot, "b-extra", '{"stream": false')
        await pilot.press("enter")
        await pilot.pause()
        assert text_of(screen, "#status").startswith("B fields:")
