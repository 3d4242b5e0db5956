"""Which GPUs belong to which endpoint: its exporter page, else NVML if local or `gpus` is set."""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from tui.gpu.models import GpuSample

GpuSelector = int | str
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "ip6-localhost"}


@dataclass(frozen=True)
class GpuPlan:
    """Where one endpoint's GPU figures come from: an exporter URL, NVML, or nowhere (and why)."""

    kind: Literal["dcgm", "nvml", "none"]
    url: str | None = None
    reason: str | None = None  # for kind "none"


def _is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host in _LOOPBACK_HOSTS or host.startswith("127."):
        return True
    return host == socket.gethostname().lower()  # no DNS look-up: it can block for seconds


def plan_for_endpoint(url: str, gpu_metrics_url: str | None, gpus: Sequence[GpuSelector] | None) -> GpuPlan:
    if gpu_metrics_url:
        return GpuPlan("dcgm", gpu_metrics_url)
    if gpus or _is_local(url):
        return GpuPlan("nvml")
    reason = "the server is on another host: set gpu_metrics_url to its DCGM exporter to see its GPUs"
    return GpuPlan("none", reason=reason)


def _matches(gpu: GpuSample, selector: GpuSelector) -> bool:
    if isinstance(selector, int):
        return gpu.index == selector
    text = selector.strip()
    if text.isdigit():
        return gpu.index == int(text)
    return gpu.uuid is not None and gpu.uuid.lower() == text.lower()


@dataclass(frozen=True)
class GpuSelection:
    gpus: tuple[GpuSample, ...]
    missing: tuple[str, ...]  # selectors that matched no GPU of the source ("gpus: 3 not found")


def select_gpus(gpus: Sequence[GpuSample], selectors: Sequence[GpuSelector] | None) -> GpuSelection:
    """The GPUs an endpoint uses: those its selectors name, in selector order; all when it has none."""
    if not selectors:
        return GpuSelection(tuple(gpus), ())
    chosen: list[GpuSample] = []
    missing: list[str] = []
    for selector in selectors:
        found = [gpu for gpu in gpus if _matches(gpu, selector) and gpu not in chosen]
        if found:
            chosen.extend(found)
        else:
            missing.append(str(selector))
    return GpuSelection(tuple(chosen), tuple(missing))


def shared_gpu_keys(selections: Mapping[str, Sequence[GpuSample]]) -> set[str]:
    """GPU keys (UUID, else index) that more than one endpoint shows (one GPU strip at the top)."""
    counts = Counter(key for gpus in selections.values() for key in {gpu.key for gpu in gpus})
    return {key for key, count in counts.items() if count > 1}
