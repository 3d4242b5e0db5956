"""The burst screen explains a burst: per-request figures from simulated servers, one URL with two request
bodies, SLOs, and the explain view (categories, distribution, /metrics), at 80x24, keyboard only."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import ContentSwitcher, DataTable, Input, Static

from tui.screens.bench import BenchScreen
from tui.settings import EndpointSettings
from tui.sim.per_request import ResponseOptions
from tui.sim.server import SimServer

FIGURES = ResponseOptions(spec_metrics="summary", timing_metrics=True, prompt_tokens_details=True)


class ExplainApp(App[None]):
    def __init__(self, endpoints: list[EndpointSettings]) -> None:
        super().__init__()
        self.endpoints = endpoints
        self.http_client = httpx.AsyncClient(limits=httpx.Limits(max_connections=100))

    def on_mount(self) -> None:
        self.push_screen(BenchScreen(self.endpoints))

    async def on_unmount(self) -> None:
        await self.http_client.aclose()


@pytest.fixture(autouse=True)
def _private_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.chdir(tmp_path)


def _text(screen: BenchScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def _type(screen: BenchScreen, pilot, field_id: str, value: str) -> None:  # type: ignore[no-untyped-def]
    screen.query_one(f"#{field_id}", Input).focus()
    await pilot.press("ctrl+a", "ctrl+k", *value)


async def test_one_url_two_bodies_and_the_explain_view() -> None:
    async with SimServer(flavor="vllm", responses=FIGURES, speed=4.0) as sim:
        same = [
            EndpointSettings(name=name, url=sim.base_url, model=sim.model) for name in ("spec-on", "spec-off")
        ]
        app = ExplainApp(same)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            assert isinstance(screen, BenchScreen)
            await _type(screen, pilot, "requests", "8")
            await _type(screen, pilot, "max-tokens", "32")
            await _type(screen, pilot, "a-extra", '{"enable_speculative": true}')
            await _type(screen, pilot, "b-extra", '{"enable_speculative": false}')
            await _type(screen, pilot, "slo", "ttft=2s,e2e=10s")
            await pilot.press("enter")
            for _ in range(600):
                if screen.summary is not None or "failed" in _text(screen, "#phase"):
                    break
                await pilot.pause(0.05)
            assert screen.summary is not None, _text(screen, "#status")
            table = screen.query_one("#results-table", DataTable)
            labels = [str(table.get_row_at(row)[0]) for row in range(table.row_count)]
            assert "decode tok/s pooled" in labels and "accept/req p10/50/90" in labels
            assert "goodput (SLO)" in labels and "TTFT server p50" in labels
            await pilot.press("e")
            assert screen.query_one("#switcher", ContentSwitcher).current == "explain"
            assert screen.query_one("#explain", VerticalScroll).has_focus
            explained = _text(screen, "#explain-text")
            assert "A accept" in explained and "code" in explained and "prose" in explained
            assert "request fields (enable_speculative), not by server" in explained
            assert "/metrics:" in explained and "SLO TTFT≤2s, e2e≤10s" in explained
            await pilot.press("e")
            assert screen.query_one("#switcher", ContentSwitcher).current == "results"


async def test_a_bad_arm_field_names_it() -> None:
    app = ExplainApp([EndpointSettings(name="x", url="http://127.0.0.1:9")])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await _type(screen, pilot, "b-extra", '{"stream": false')
        await pilot.press("enter")
        await pilot.pause()
        assert _text(screen, "#status").startswith("B fields:")
