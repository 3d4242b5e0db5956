"""The GPUs during an A/B burst: energy per output token, tokens per joule, throttling per arm."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Literal

import httpx

from tui.gpu.history import EnergyFigure, energy_per_token, tokens_per_joule
from tui.gpu.monitor import GpuMonitor
from tui.gpu.records import ArmGpuRecord, Rounds
from tui.settings import EndpointSettings

WATCH_INTERVAL_S = 0.5


class BurstGpuWatch:
    """Polls the GPU sources of the arms (by base URL) while a burst runs."""

    def __init__(
        self,
        arms: Sequence[EndpointSettings],
        client: httpx.AsyncClient,
        *,
        interval_s: float = WATCH_INTERVAL_S,
    ) -> None:
        self.urls = {endpoint.url.rstrip("/"): endpoint.name for endpoint in arms}
        self.monitor = GpuMonitor(arms, client)
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.monitor.poll()
        self._task = asyncio.create_task(self._poll_forever(), name="spectop burst GPU watch")

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.monitor.poll()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.monitor.poll()
        self.monitor.close()  # the figures are in the histories now: NVML is not needed any more

    def close(self) -> None:
        self.monitor.close()

    def record(
        self, url: str, start: float, end: float, output_tokens: int, phases: Rounds | None = None
    ) -> ArmGpuRecord | None:
        """The arm at `url` between two moments; None without a GPU source. `phases`: its own rounds
        (alternate schedule): on GPUs shared with another arm, its energy is theirs summed."""
        name = self.urls.get(url.rstrip("/"))
        view = self.monitor.latest.get(name) if name is not None else None
        if view is None:
            return None
        if not view.available:
            return ArmGpuRecord(note=view.reason or "no GPU source")
        labels = [gpu.label for gpu in view.gpus]
        throttling = self.monitor.throttling_between(view.endpoint, start, end)
        history = self.monitor.history(view.endpoint)
        throttled = None
        if history is not None:
            samples = [s for key in history[1] for s in history[0].samples_between(key, start, end)]
            reasons_known = bool(samples) and all(s.throttle_reasons is not None for s in samples)
            throttled = True if throttling is not None else (False if reasons_known else None)
        latest = self.monitor.latest.items()
        others = set(view.keys) & {key for other, shown in latest if other != name for key in shown.keys}
        note = scope = None
        energy = None
        if others and phases:
            energy = self._phases_energy(view.endpoint, phases)
            if energy is None:
                note = (
                    "GPU readings too sparse over the arm's own rounds for its energy on the GPUs it "
                    "shares with the other arm (exporter collect interval?)"
                )
            else:
                shared = "alternate schedule; shared GPUs: the idle arm's draw in it"
                scope = f"over its own {len(phases)} rounds ({shared})"
        elif others:
            note = "both arms ran on the same GPUs at the same time: each arm's energy is unknown"
        else:
            energy = self.monitor.energy_between(view.endpoint, start, end)
            if energy is None:
                note = "GPU readings too sparse over the arm for its energy (exporter collect interval?)"
        joules = energy.joules if energy is not None else None
        return ArmGpuRecord(
            energy_j=joules,
            energy_per_token_j=energy_per_token(joules, output_tokens),
            tokens_per_joule=tokens_per_joule(joules, output_tokens),
            energy_method=energy.method if energy is not None else None,
            energy_scope=scope,
            throttled=throttled,
            throttle_note=throttling.message if throttling is not None else None,
            note=note,
            gpus=labels,
        )

    def _phases_energy(self, endpoint: str, phases: Rounds) -> EnergyFigure | None:
        """The GPUs' energy summed over the phases; None when any phase's is unknown."""
        figures = [self.monitor.energy_between(endpoint, first, last) for first, last in phases]
        known = [figure for figure in figures if figure is not None]
        if not figures or len(known) < len(figures):
            return None
        method: Literal["counter", "power"] = (
            "power" if any(f.method == "power" for f in known) else "counter"
        )
        return EnergyFigure(sum(f.joules for f in known), sum(f.seconds for f in known), method)


def watch_for(
    arm_urls: Sequence[str], endpoints: Sequence[EndpointSettings], client: httpx.AsyncClient
) -> BurstGpuWatch | None:
    """A watch of the arms' GPUs (by base URL) with a `gpu_metrics_url`; None when no arm has one."""
    wanted = {url.rstrip("/") for url in arm_urls}
    arms = [e for e in endpoints if e.url.rstrip("/") in wanted and e.gpu_metrics_url]
    return BurstGpuWatch(arms, client) if arms else None
