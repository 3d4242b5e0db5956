"""The speculative-decoding model: position i is accepted with conditional probability p_i until the first
rejection (accepted + 1 emitted); step time grows with batch, k and context, so drafting pays at low load."""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from typing import Any

from tui.configs.sglang_adaptive import tiers
from tui.sim.config import SimConfig
from tui.sim.tokens import content_factor

CONTENT_CHARS = 2000  # the content factor reads the prompt's end: what the draft follows


@dataclass
class Behaviour:
    """Runtime-changeable model parameters (see `SimServer.control`)."""

    k: int
    acceptance: list[float]
    content_effect: float
    step_base_s: float
    step_per_seq_s: float
    verify_cost_per_draft: float
    draft_cost_s: float
    prefill_base_s: float
    prefill_per_token_s: float
    spec_prefill_overhead: float
    speed: float
    context_half_tokens: float = 0.0  # acceptance halves at this prompt length (0: no fall-off)
    context_s_per_1k: float = 0.0  # step time per 1k context tokens per verified token
    spec_on_cost_s: float = 0.0  # any k > 0: the cost of speculation being on (with its load term)
    # SGLang topk > 1: the target verifies a tree of num_draft_tokens - 1 drafts; acceptance follows a chain
    # of min(num_steps, num_draft_tokens - 1) positions (the sim does not model what a wider tree gains).
    verify_drafts: int | None = None

    @classmethod
    def from_config(cls, config: SimConfig) -> Behaviour:
        sim = config.sim
        tree = config.num_draft_tokens - 1 if config.k and config.num_draft_tokens else None
        return cls(
            k=config.k if tree is None else min(config.k, tree),
            acceptance=config.acceptance(),
            content_effect=sim.content_effect,
            step_base_s=sim.step_base_ms / 1000.0,
            step_per_seq_s=sim.step_per_seq_ms / 1000.0,
            verify_cost_per_draft=sim.verify_cost_per_draft,
            draft_cost_s=sim.draft_cost_ms / 1000.0,
            prefill_base_s=sim.prefill_base_ms / 1000.0,
            prefill_per_token_s=sim.prefill_ms_per_token / 1000.0,
            spec_prefill_overhead=sim.spec_prefill_overhead,
            speed=sim.speed,
            context_half_tokens=sim.context_half_tokens,
            context_s_per_1k=sim.context_ms_per_1k / 1000.0,
            spec_on_cost_s=sim.spec_on_cost_ms / 1000.0,
            verify_drafts=tree,
        )

    def set_acceptance(self, value: list[float] | float) -> None:
        """A list replaces the probabilities (its last one repeated up to k); a number scales them."""
        if isinstance(value, list):
            self.acceptance = [*value, *value[-1:] * (self.k - len(value))]
        else:
            self.acceptance = [min(1.0, p * value) for p in self.acceptance]

    def request_acceptance(self, prompt_text: str, temperature: float, prompt_tokens: int = 0) -> list[float]:
        """Per-position probabilities for one request: the content factor of the text it ends with (what
        the draft follows), the context factor, and a little less when sampling."""
        factor = content_factor(prompt_text[-CONTENT_CHARS:], self.content_effect)
        factor *= self.context_factor(prompt_tokens)
        if temperature > 0:
            factor *= 1.0 - 0.08 * min(temperature, 1.5)
        return [min(0.995, p * factor) for p in self.acceptance[: self.k]]

    def decode_step_s(self, batch: int, k: int | None = None) -> float:
        """Model time of one decode step (before the speed multiplier)."""
        drafts = self.k if k is None else k
        if batch <= 0:
            return 0.0
        verified = self.verify_drafts if k is None and self.verify_drafts is not None else drafts
        verify = self.step_per_seq_s * batch * (1.0 + self.verify_cost_per_draft * verified)
        draft = (self.draft_cost_s * drafts + (self.spec_on_cost_s if drafts else 0.0)) * (1.0 + 0.05 * batch)
        return self.step_base_s + verify + draft

    def context_factor(self, prompt_tokens: int) -> float:
        """Acceptance at this prompt length over acceptance at a short one: 1 / (1 + tokens / half)."""
        if self.context_half_tokens <= 0:
            return 1.0
        return 1.0 / (1.0 + max(0, prompt_tokens) / self.context_half_tokens)

    def context_s(self, context_tokens: int, k: int | None = None) -> float:
        """Model time the batch's context adds to a step: each of the k + 1 verified tokens of every
        sequence attends to its context (`context_tokens`, summed over the batch)."""
        drafts = self.k if k is None else k
        verified = self.verify_drafts if k is None and self.verify_drafts is not None else drafts
        return self.context_s_per_1k * context_tokens / 1000.0 * (1 + verified)

    def prefill_s(self, computed_tokens: int) -> float:
        """Model time to prefill `computed_tokens` uncached tokens (drafting adds the draft's prefill)."""
        base = self.prefill_base_s + self.prefill_per_token_s * computed_tokens
        return base * (1.0 + (self.spec_prefill_overhead if self.k else 0.0))


def draw_accepted(rng: random.Random, probabilities: list[float]) -> int:
    """How many leading draft positions the target accepts: stop at the first rejection."""
    accepted = 0
    for p in probabilities:
        if rng.random() >= p:
            break
        accepted += 1
    return accepted


def expected_tokens_per_step(probabilities: list[float]) -> float:
    """1 + E[accepted] = 1 + sum over i of prod_{j<=i} p_j (the mean acceptance length)."""
    total, chain = 1.0, 1.0
    for p in probabilities:
        chain *= p
        total += chain
    return total


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
    """SGLang's adaptive draft steps (`--speculative-adaptive`, sgl PRs #21599, #24055). One slot per
    batch-size section: an EMA of the accepted drafts per request, and after `warmup_batches` every
    `update_interval` batches the steps move down while the EMA is at or below the lower tier's threshold,
    else up while above the current one's (tier - 0.5 + hysteresis), as upstream's `AdaptiveStepSlot` does."""

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
