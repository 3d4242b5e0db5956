"""GPU rules as pure functions: memory ≥ 95% with speculation on, throttling during a burst, and whether a
config's memory fraction fits the GPUs as they are now (`spectop config lint` on the node)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from tui.format import fmt_fraction_setting, fmt_gib, fmt_rate, fmt_setting
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


@dataclass(frozen=True)
class HeadroomProblem:
    id: str
    severity: Literal["error", "warning", "info"]
    message: str
    fix: str


LOWER_TO = 0.85  # the fraction to suggest to a server that fills its GPUs with speculation on
LOWER_STEP = 0.05  # below that already: this much less than the value set


def _lower_fraction(fraction: float) -> float:
    """A fraction below `fraction`, never the value already set (0.85, or 0.05 less), rounded down."""
    wanted = LOWER_TO if fraction > LOWER_TO + 0.005 else fraction - LOWER_STEP
    return max(0.05, math.floor(round(wanted * 100, 6)) / 100)


def headroom_problems(
    fraction: float, fraction_key: str, gpus: Sequence[GpuSample], speculation_on: bool
) -> list[HeadroomProblem]:
    """Problems of `fraction` (the config's value of `fraction_key`) on these GPUs; [] when it fits."""
    known = [gpu for gpu in gpus if gpu.memory_used_bytes is not None and gpu.memory_total_bytes]
    problems: list[HeadroomProblem] = []
    too_small: list[tuple[GpuSample, float, float, float]] = []
    too_full: list[tuple[GpuSample, float]] = []
    for gpu in known:
        total = float(gpu.memory_total_bytes or 0)
        used = float(gpu.memory_used_bytes or 0)
        claim = fraction * total
        if used < claim:
            free = total - used
            if free < claim:
                too_small.append((gpu, claim, free, used))
        elif speculation_on and used / total >= MEMORY_HIGH_FRACTION:
            too_full.append((gpu, used / total))
    if too_small:
        worst = min(too_small, key=lambda item: item[2] - item[1])
        gpu, claim, free, used = worst
        total = float(gpu.memory_total_bytes or 0)
        fits = math.floor((free / total) * 100) / 100
        others = ", ".join(item[0].label for item in too_small if item is not worst)
        problems.append(
            HeadroomProblem(
                "gpu-headroom-too-small",
                "warning",
                f"{fraction_key} {fraction} leaves {fmt_gib(total - claim)} of {gpu.label} "
                f"({fmt_gib(total)}) for everything else, but {fmt_gib(used)} is in use now"
                + (f" (also on {others})" if others else "")
                + ": the server will not start beside it, unless that memory is its own (freed on restart)",
                f"stop what holds the memory, or lower {fraction_key} to {fmt_setting(fits)} at most",
            )
        )
    if too_full:
        full_gpu, fullest = max(too_full, key=lambda item: item[1])
        problems.append(
            HeadroomProblem(
                "gpu-memory-full-with-spec",
                "warning",
                f"{full_gpu.label} is at {fmt_rate(fullest)} of its memory now with speculation on: drafting "
                "needs KV cache beyond this (OOM risk)",
                f"lower {fraction_key} to {fmt_fraction_setting(_lower_fraction(fraction))}, or halve the "
                "maximum number of running sequences",
            )
        )
    return problems
