"""A snapshot of the bench screen comparing two past bursts (fixed data: no clocks, seeded bootstrap)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable

from tui.bench.burst_store import save_burst
from tui.bench.prompts import load_prompt_set
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord, RequestResult, ServerAcceptance
from tui.screens.bench import BenchScreen
from tui.settings import EndpointSettings


def _burst(minute: int, tokens_per_chunk: int, gap_s: float, acceptance: float | None) -> BurstResult:
    prompt_set = load_prompt_set("code-en")
    requests = []
    for index, prompt in enumerate(prompt_set.prompts[:6]):
        chunks = 60 // tokens_per_chunk
        ttft = 0.050 + 0.002 * index
        times = [ttft + i * (gap_s + 0.0001 * index) for i in range(chunks)]
        requests.append(
            RequestResult(
                arm="a",
                index=index,
                prompt_id=prompt.id,
                scheduled_s=index * 0.5,
                sent_s=index * 0.5 + 0.001,
                ttft_s=ttft,
                e2e_s=times[-1] + 0.001,
                chunk_times_s=times,
                chunk_chars=[5 * tokens_per_chunk] * chunks,
                chunk_tokens=[tokens_per_chunk] * chunks,
                output_tokens=60,
                text="word " * 60,
                finish_reason="length",
            )
        )
    settings = BurstSettingsRecord(
        prompt_set="code-en",
        prompt_set_digest=prompt_set.digest,
        requests=6,
        concurrency=1,
        max_tokens=60,
        temperature=0.0,
    )
    arm = ArmResult(
        label="a",
        name="gpu-node",
        url="http://10.0.0.7:8000",
        active_s=sum(r.e2e_s or 0 for r in requests),
        requests=requests,
        server=ServerAcceptance(
            acceptance_rate=acceptance, mean_acceptance_length=1 + 2 * acceptance if acceptance else None
        ),
    )
    return BurstResult(
        started_at=datetime(2026, 11, 30, 2, minute, 0, tzinfo=UTC),
        duration_s=3.0,
        settings=settings,
        arms=[arm],
    )


class SnapshotApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.http_client = httpx.AsyncClient()

    def on_mount(self) -> None:
        self.push_screen(BenchScreen([EndpointSettings(name="gpu-node", url="http://10.0.0.7:8000")]))


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.chdir(tmp_path)
    save_burst(_burst(10, 1, 0.010, None))  # MTP off: one token per 10 ms
    save_burst(_burst(40, 2, 0.012, 0.71))  # MTP on: two tokens per 12 ms


def test_bench_comparison_80x24(snap_compare: Any, history: None) -> None:
    async def compare(pilot: Pilot[Any]) -> None:
        screen = pilot.app.screen
        assert isinstance(screen, BenchScreen)
        for _ in range(100):
            if screen.query_one("#history-table", DataTable).row_count == 2:
                break
            await pilot.pause(0.05)
        await pilot.press("h", "b", "down", "a", "ctrl+r")  # newest as B, the older one as A
        for _ in range(200):
            if screen.summary is not None:
                break
            await pilot.pause(0.05)
        await pilot.pause()

    assert snap_compare(SnapshotApp(), terminal_size=(80, 24), run_before=compare)
