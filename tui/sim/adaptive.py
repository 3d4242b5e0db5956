"""SGLang's adaptive draft steps (`--speculative-adaptive`, sgl PRs #21599, #24055) in the simulator.

One slot per batch-size section: an EMA of the accepted drafts per request, and after `warmup_batches` every
`update_interval` batches the steps move down while the EMA is at or below the lower tier's threshold, else
up while above the current one's (tier - 0.5 + hysteresis), as upstream's `AdaptiveStepSlot` does."""

from __future__ import annotations

import bisect
from typing import Any

from tui.configs.sglang_adaptive import tiers


class _Slot:
    def __init__(self, settings: dict[str, Any], initial: int | None) -> None:
        self.tiers = tiers(settings)
        self.alpha = float(settings.get("ema_alpha", 0.2))
        self.interval = int(settings.get("update_interval", 5))
        self.warmup = int(settings.get("warmup_batches", 10))
        self.down = float(settings.get("down_hysteresis", -0.25))
        self.up = float(settings.get("up_hysteresis", 0.0))
        self.steps = initial if initial in self.tiers else self.tiers[len(self.tiers) // 2]
        self.ema = float(self.steps - 1)  # upstream's neutral start
        self.batches = 0

    def observe(self, accepted: list[int]) -> None:
        if not accepted:
            return
        if self.steps > 0:
            self.ema += self.alpha * (sum(accepted) / len(accepted) - self.ema)
        self.batches += 1
        after_warmup = self.batches - self.warmup
        if after_warmup > 0 and after_warmup % self.interval == 0:
            self.steps = self._target()

    def _target(self) -> int:
        index = self.tiers.index(self.steps)
        if self.steps == 0:  # no drafting, no evidence: probe the next tier up
            return self.tiers[min(index + 1, len(self.tiers) - 1)]
        start = index
        while index > 0 and self.ema <= max(0.5, self.tiers[index - 1] - 0.5) + self.down:
            index -= 1
        if index == start:
            while index < len(self.tiers) - 1 and self.ema > self.tiers[index] - 0.5 + self.up:
                index += 1
        return self.tiers[index]


class AdaptiveSteps:
    """The steps each decode batch drafts, and what the verifications teach the slot of its batch size."""

    def __init__(self, sections: dict[str, dict[str, Any]], initial: int | None = None) -> None:
        shared = sections.get("", {})
        keyed = {int(key): value for key, value in sections.items() if key}
        self.bounds = sorted(keyed) or [1]
        self.slots = [_Slot({**shared, **keyed.get(bound, {})}, initial) for bound in self.bounds]

    def _slot(self, batch: int) -> _Slot:
        return self.slots[max(0, bisect.bisect_right(self.bounds, batch) - 1)]

    def steps_for(self, batch: int) -> int:
        return self._slot(batch).steps

    def observe(self, batch: int, accepted: list[int]) -> None:
        """One verification of a batch: the drafts each request had accepted."""
        self._slot(batch).observe(accepted)
