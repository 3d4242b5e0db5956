"""Polling each GPU source once per poll into windowed histories; a failing source gives its reason."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from tui.gpu.alerts import GpuCondition, throttling_during_burst
from tui.gpu.dcgm import DEFAULT_TIMEOUT_S, read_dcgm
from tui.gpu.history import DEFAULT_HISTORY_S, EnergyFigure, GpuHistory
from tui.gpu.mapping import GpuPlan, plan_for_endpoint, select_gpus, shared_gpu_keys
from tui.gpu.models import GpuReading, GpuSample, GpuUnavailable
from tui.gpu.nvml import NvmlSource
from tui.settings import EndpointSettings

NVML_SOURCE = "NVML"


@dataclass(frozen=True)
class EndpointGpus:
    """One endpoint's GPUs after a poll, or why it has none (then the panel is that one line)."""

    endpoint: str
    source: str  # "NVML", an exporter URL, or "" when there is no source
    gpus: tuple[GpuSample, ...] = ()
    reason: str | None = None
    missing: tuple[str, ...] = ()  # `gpus` selectors the source does not have

    @property
    def available(self) -> bool:
        return bool(self.gpus)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(gpu.key for gpu in self.gpus)


class GpuMonitor:
    def __init__(
        self,
        endpoints: Sequence[EndpointSettings],
        client: httpx.AsyncClient,
        *,
        history_s: float = DEFAULT_HISTORY_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.client = client
        self.history_s = history_s
        self.timeout_s = timeout_s  # per exporter read
        self.plans: dict[str, GpuPlan] = {
            endpoint.name: plan_for_endpoint(endpoint.url, endpoint.gpu_metrics_url, endpoint.gpus)
            for endpoint in endpoints
        }
        self.selectors = {endpoint.name: endpoint.gpus for endpoint in endpoints}
        self._nvml: NvmlSource | None = None
        self.histories: dict[str, GpuHistory] = {}
        self.latest: dict[str, EndpointGpus] = {}

    def _source(self, plan: GpuPlan) -> str:
        if plan.kind == "dcgm" and plan.url:
            return plan.url
        return NVML_SOURCE if plan.kind == "nvml" else ""

    async def _read(self, source: str) -> GpuReading | GpuUnavailable:
        if source == NVML_SOURCE:
            if self._nvml is None:
                self._nvml = NvmlSource()
            return await self._nvml.read()
        return await read_dcgm(self.client, source, timeout_s=self.timeout_s)

    async def poll(self) -> dict[str, EndpointGpus]:
        """Read every source once and return each endpoint's GPUs (also kept in `latest`)."""
        sources = sorted({self._source(plan) for plan in self.plans.values()} - {""})
        results = dict(zip(sources, await asyncio.gather(*(self._read(s) for s in sources)), strict=True))
        for source, result in results.items():
            if isinstance(result, GpuReading):
                self.histories.setdefault(source, GpuHistory(self.history_s)).add(result)
        self.latest = {name: self._view(name, plan, results) for name, plan in self.plans.items()}
        return self.latest

    def _view(
        self, name: str, plan: GpuPlan, results: dict[str, GpuReading | GpuUnavailable]
    ) -> EndpointGpus:
        source = self._source(plan)
        if not source:
            return EndpointGpus(name, "", reason=plan.reason or "no GPU source")
        result = results[source]
        if isinstance(result, GpuUnavailable):
            return EndpointGpus(name, source, reason=result.reason)
        selection = select_gpus(result.gpus, self.selectors.get(name))
        if not selection.gpus:
            have = ", ".join(gpu.label for gpu in result.gpus)
            wanted = ", ".join(selection.missing)
            reason = f"gpus {wanted} not found on {source} (it has {have})"
            return EndpointGpus(name, source, reason=reason, missing=selection.missing)
        return EndpointGpus(name, source, selection.gpus, missing=selection.missing)

    def shared_keys(self) -> set[str]:
        return shared_gpu_keys({name: view.gpus for name, view in self.latest.items()})

    def history(self, endpoint: str) -> tuple[GpuHistory, tuple[str, ...]] | None:
        """The history holding an endpoint's GPUs and their keys, once a poll has seen them."""
        view = self.latest.get(endpoint)
        if view is None or not view.available:
            return None
        history = self.histories.get(view.source)
        return None if history is None else (history, view.keys)

    def energy_between(self, endpoint: str, start: float, end: float) -> EnergyFigure | None:
        """Energy used by the endpoint's GPUs between two `time.time()` moments, or None if unknown."""
        found = self.history(endpoint)
        return None if found is None else found[0].energy_between(start, end, found[1])

    def throttling_between(self, endpoint: str, start: float, end: float) -> GpuCondition | None:
        found = self.history(endpoint)
        return None if found is None else throttling_during_burst(found[0], start, end, found[1])

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.close()


async def read_once(gpu_metrics_url: str | None = None) -> GpuReading | GpuUnavailable:
    """One GPU reading (exporter at `gpu_metrics_url`, else NVML) for a command that runs once."""
    if gpu_metrics_url:
        async with httpx.AsyncClient(timeout=5.0) as client:
            return await read_dcgm(client, gpu_metrics_url)
    source = NvmlSource()
    try:
        return await source.read()
    finally:
        source.close()
