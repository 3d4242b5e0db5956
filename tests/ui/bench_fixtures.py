"""Shared pieces of the burst screen tests (fixtures in conftest.py); recorded bursts of fixed figures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input, Static
from ui_waiting import press_at_once, wait_for

from tui.bench.engine import ArmProgress, BurstConfig, BurstProgress
from tui.bench.prompts import load_prompt_set
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord, RequestResult, ServerAcceptance
from tui.bench.session import ProgressCallback
from tui.screens.bench import BenchScreen
from tui.settings import EndpointSettings


class BenchTestApp(App[None]):
    """The burst screen alone, given the app's one httpx client."""

    def __init__(self, endpoints: list[EndpointSettings], **screen_options: Any) -> None:
        super().__init__()
        self.endpoints = endpoints
        self.screen_options = screen_options
        self.http_client = httpx.AsyncClient(limits=httpx.Limits(max_connections=100))

    def on_mount(self) -> None:
        self.push_screen(BenchScreen(self.endpoints, self.http_client, **self.screen_options))

    async def on_unmount(self) -> None:
        await self.http_client.aclose()


def bench_screen(app: App[Any]) -> BenchScreen:
    screen = app.screen
    assert isinstance(screen, BenchScreen)
    return screen


@asynccontextmanager
async def bench_on(
    endpoints: list[EndpointSettings], *, size: tuple[int, int] = (80, 24), **screen_options: Any
) -> AsyncIterator[tuple[Pilot[Any], BenchScreen]]:
    async with BenchTestApp(endpoints, **screen_options).run_test(size=size) as pilot:
        yield pilot, bench_screen(pilot.app)


def text_of(screen: BenchScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def until(pilot: Pilot[Any], condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Wait for the screen to reach `condition`; a timeout says the phase and status it stopped at."""
    shown = lambda: f"phase/status: {[text_of(pilot.app.screen, s) for s in ('#phase', '#status')]}"  # noqa: E731
    await wait_for(pilot, condition, "the burst screen", timeout_s=timeout_s, explain=shown)


async def type_into(screen: BenchScreen, pilot: Pilot[Any], field_id: str, value: str) -> None:
    field = screen.query_one(f"#{field_id}", Input)
    field.focus()
    # i: into edit mode (a letter is a key before); the keys at once, as a paste or tmux sends them
    await press_at_once(pilot, "i", "ctrl+a", "ctrl+k", *value)
    await wait_for(pilot, lambda: field.value == value, f"{field_id} = {value!r}")


MTP_OFF = EndpointSettings(name="mtp-off", url="http://10.0.0.7:8000", model="qwen3-8b")
MTP_ON = EndpointSettings(name="mtp-on", url="http://10.0.0.8:8000", model="qwen3-8b")
STARTED_AT = datetime(2026, 11, 30, 2, 40, 0, tzinfo=UTC)


def recorded_arm(
    label: str, endpoint: EndpointSettings, tokens_per_chunk: int, gap_s: float, acceptance: float | None
) -> ArmResult:
    """Six code-en requests of 60 tokens: `tokens_per_chunk` per chunk every `gap_s` (index-dependent
    offsets, so the percentiles are not all one value)."""
    prompt_set = load_prompt_set("code-en")
    requests = []
    for index, prompt in enumerate(prompt_set.prompts[:6]):
        chunks = 60 // tokens_per_chunk
        ttft = 0.050 + 0.002 * index
        times = [ttft + i * (gap_s + 0.0001 * index) for i in range(chunks)]
        requests.append(
            RequestResult(
                arm=label, index=index, prompt_id=prompt.id, scheduled_s=index * 0.5,
                sent_s=index * 0.5 + 0.001, ttft_s=ttft, e2e_s=times[-1] + 0.001, chunk_times_s=times,
                chunk_chars=[5 * tokens_per_chunk] * chunks, chunk_tokens=[tokens_per_chunk] * chunks,
                output_tokens=60, text="word " * 60, finish_reason="length",
            )
        )  # fmt: skip
    server = ServerAcceptance(
        acceptance_rate=acceptance, mean_acceptance_length=1 + 2 * acceptance if acceptance else None
    )
    active_s = sum(r.e2e_s or 0 for r in requests)
    return ArmResult(
        label=label, name=endpoint.name, url=endpoint.url, active_s=active_s, requests=requests, server=server
    )


def recorded_burst(arms: list[ArmResult], started_at: datetime = STARTED_AT) -> BurstResult:
    prompt_set = load_prompt_set("code-en")
    settings = BurstSettingsRecord(
        prompt_set="code-en", prompt_set_digest=prompt_set.digest, requests=6, concurrency=1, max_tokens=60,
        temperature=0.0,
    )  # fmt: skip
    return BurstResult(started_at=started_at, duration_s=3.0, settings=settings, arms=arms)


def mtp_burst() -> BurstResult:
    """A = MTP off (one token per 10 ms), B = MTP on (two tokens per 12 ms, 71% accepted)."""
    return recorded_burst(
        [recorded_arm("a", MTP_OFF, 1, 0.010, None), recorded_arm("b", MTP_ON, 2, 0.012, 0.71)]
    )


def final_progress(result: BurstResult) -> BurstProgress:
    """The engine's last report for a finished burst, from its figures (no clock)."""
    arms = []
    for arm in result.arms:
        ttfts = sorted(r.ttft_s for r in arm.requests if r.ttft_s is not None)
        rates = [  # tokens after the first chunk over the time after it
            sum((r.chunk_tokens or [])[1:]) / (r.chunk_times_s[-1] - r.chunk_times_s[0])
            for r in arm.requests
            if len(r.chunk_times_s) > 1
        ]
        arms.append(
            ArmProgress(
                label=arm.label, name=arm.name, done=len(arm.requests), total=len(arm.requests),
                ttft_p50_s=ttfts[len(ttfts) // 2] if ttfts else None,
                decode_tokens_per_s_pooled=sum(rates) / len(rates) if rates else None,
                output_tokens=sum(r.output_tokens or 0 for r in arm.requests),
            )
        )  # fmt: skip
    total = sum(arm.total for arm in arms)
    return BurstProgress(phase="done", done=total, total=total, elapsed_s=result.duration_s, arms=arms)


def replaying(result: BurstResult) -> Callable[..., Any]:
    """A stand-in for the engine's `run_burst` that sends nothing: it reports the recorded burst's last
    progress and returns it (what a live burst of fixed figures would)."""

    async def run_burst(
        config: BurstConfig, client: httpx.AsyncClient, *, on_progress: ProgressCallback | None = None
    ) -> BurstResult:
        assert [arm.name for _, arm in config.arms()] == [arm.name for arm in result.arms]
        if on_progress is not None:
            on_progress(final_progress(result))
        return result

    return run_burst
