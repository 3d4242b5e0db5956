"""Per-backend knowledge of /metrics pages: one module per server (optionally `segment_extras`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from tui.telemetry.backends import llamacpp, sglang, vllm
from tui.telemetry.backends.base import Delta, PageSnapshot, SeriesMemo
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import Sample

__all__ = ["BACKENDS", "Backend", "backend_module", "detect_backend"]


class Backend(Protocol):
    NAME: str
    PREFIX: str

    def extract(self, samples: Iterable[Sample], memo: SeriesMemo | None = None) -> PageSnapshot: ...

    def derive(self, delta: Delta | None, last: PageSnapshot) -> Figures: ...


BACKENDS: dict[str, Backend] = {module.NAME: module for module in (vllm, sglang, llamacpp)}


def detect_backend(samples: Iterable[Sample]) -> str | None:
    """ "vllm", "sglang" or "llamacpp" from the metric name prefixes (most names win), else None."""
    counts = dict.fromkeys(BACKENDS, 0)
    for name in {sample.name for sample in samples}:  # distinct names are enough to vote
        prefix, colon, _ = name.partition(":")
        if colon and prefix in counts:
            counts[prefix] += 1
    best = max(counts, key=lambda name: counts[name])
    return best if counts[best] else None


def backend_module(name: str | None) -> Backend | None:
    return BACKENDS.get(name) if name else None
