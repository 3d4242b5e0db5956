"""Load shapes: a fixed count at a concurrency (closed loop), or a request rate (open loop), whose
scheduled offsets make client-side queueing show as send lag rather than hide in TTFT."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Arrival = Literal["poisson", "constant"]


@dataclass(frozen=True)
class LoadShape:
    concurrency: int = 1
    rate: float | None = None  # requests per second per arm; None = as fast as the concurrency allows
    arrival: Arrival = "poisson"

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.rate is not None and not self.rate > 0:
            raise ValueError(f"rate must be above 0 requests/s, got {self.rate}")

    @property
    def open_loop(self) -> bool:
        return self.rate is not None


def arrival_offsets(count: int, rate: float, arrival: Arrival, rng: random.Random) -> list[float]:
    """Send offsets in seconds from the start for `count` requests at `rate` per second."""
    offsets: list[float] = []
    elapsed = 0.0
    for _ in range(count):
        offsets.append(elapsed)
        elapsed += rng.expovariate(rate) if arrival == "poisson" else 1.0 / rate
    return offsets
