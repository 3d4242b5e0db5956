"""Does a config's memory fraction fit the GPUs as they are now? (`spectop config lint` on the node)"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tui.format import fmt_fraction_setting, fmt_gib, fmt_rate, fmt_setting
from tui.gpu.alerts import MEMORY_HIGH_FRACTION
from tui.gpu.models import GpuSample


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
