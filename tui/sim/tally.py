"""Small accumulators shared by the metrics recorders and the log writers."""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from tui.sim.engine import StepReport


@dataclass
class DecodeWindow:
    """SGLang's decode-report window: sums over decode iterations since the last report."""

    started: float = field(default_factory=time.monotonic)
    iterations: int = 0
    tokens: int = 0
    verify_steps: int = 0
    accepted: int = 0

    def add(self, report: StepReport) -> bool:
        """Add one engine step; True when it was a decode iteration."""
        decoded = report.decode_records
        if not decoded:
            return False
        self.iterations += 1
        for record in decoded:
            self.tokens += record.emitted
            if record.drafted:
                self.verify_steps += 1
                self.accepted += record.accepted
        return True

    def accept_length(self) -> float:
        return (self.accepted + self.verify_steps) / self.verify_steps if self.verify_steps else 0.0

    def accept_rate(self, num_draft_tokens: int) -> float:
        denominator = self.verify_steps * max(1, num_draft_tokens - 1)
        return self.accepted / denominator if self.verify_steps else 0.0

    def throughput(self, now: float) -> float:
        return self.tokens / max(1e-6, now - self.started)

    def reset(self, now: float) -> None:
        self.started = now
        self.tokens = self.verify_steps = self.accepted = 0


class BucketCounts:
    """A Prometheus-style histogram kept by hand (non-cumulative counts, sum, count)."""

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0.0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0.0

    def observe(self, value: float, weight: float = 1.0, amount: float | None = None) -> None:
        """Add `weight` observations of `value`; `amount` (default value × weight) goes into the sum."""
        self.counts[bisect.bisect_left(self.bounds, value)] += weight
        self.sum += value * weight if amount is None else amount
        self.count += weight

    def cumulative(self) -> list[float]:
        total, out = 0.0, []
        for count in self.counts:
            total += count
            out.append(total)
        return out
