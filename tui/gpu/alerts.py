"""GPU alert rules as pure functions: memory ≥ 95% with speculation on, throttling during a burst."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from tui.format import fmt_rate
from tui.gpu.history import GpuHistory
from tui.gpu.models import REASON_GPU_IDLE, THROTTLING_REASONS, GpuSample, reason_names

MEMORY_HIGH_FRACTION = 0.95

GpuAlertKind = Literal["gpu_memory_high", "gpu_throttling"]


@dataclass(frozen=True)
class GpuCondition:
    """A condition the alert engine turns into an alert (it keeps start / clear times)."""

    kind: GpuAlertKind
    severity: Literal["warning", "critical"]
    message: str
    gpus: tuple[str, ...]  # labels of the GPUs concerned ("GPU 0", ...)


def memory_high_with_speculation(
    gpus: Sequence[GpuSample], speculation_on: bool | None
) -> GpuCondition | None:
    """A warning when speculation is on and a GPU's memory is at MEMORY_HIGH_FRACTION of its total or more."""
    if speculation_on is not True:
        return None
    high = [
        (gpu, fraction)
        for gpu in gpus
        if (fraction := gpu.memory_fraction) is not None and fraction >= MEMORY_HIGH_FRACTION
    ]
    if not high:
        return None
    worst_gpu, worst = max(high, key=lambda item: item[1])
    where = ", ".join(gpu.label for gpu, _ in high)
    return GpuCondition(
        "gpu_memory_high",
        "warning",
        f"GPU memory at {fmt_rate(worst)} ({worst_gpu.label}) with speculation on: drafts need KV cache "
        f"beyond this (OOM risk); lower gpu_memory_utilization to 0.85 or halve max_num_seqs [{where}]",
        tuple(gpu.label for gpu, _ in high),
    )


def throttling_during_burst(
    history: GpuHistory, start: float, end: float, keys: Iterable[str] | None = None
) -> GpuCondition | None:
    """A warning when any reading of the GPUs (all, or `keys`) between `start` and `end` shows throttling."""
    chosen = history.keys() if keys is None else list(keys)
    mask = 0
    labels: list[str] = []
    for key in chosen:
        throttled = [gpu for gpu in history.samples_between(key, start, end) if gpu.throttling]
        if throttled:
            labels.append(throttled[0].label)
            for gpu in throttled:
                mask |= (gpu.throttle_reasons or 0) & THROTTLING_REASONS & ~REASON_GPU_IDLE
    if not labels:
        return None
    return GpuCondition(
        "gpu_throttling",
        "warning",
        f"clocks throttled during the burst ({', '.join(reason_names(mask))} on {', '.join(labels)}): "
        "the arms did not run at the same clocks, so the comparison is confounded",
        tuple(labels),
    )
