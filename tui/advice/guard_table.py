"""Where one k does not fit all loads: the advisor's best k at each calibrated load, offered as vLLM's
`num_speculative_tokens_per_batch_size` (the guard offers it in ask mode; the advisor can call
`table_offer` for its own words).

At each load the step-cost model has measured, `advise` gives the best trusted k. A table is offered only
when, wherever two neighbouring loads want different k, each load's k beats the other's there by more
than that load's advice threshold (the margin, the model's error and the calibration's uncertainty):
where either k is within noise of the best at both loads, that one k fits them both.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tui.advice.advisor import DEFAULT_MARGIN, Advice, advise
from tui.advice.stepcost import StepCostModel
from tui.configs.spec_table import VLLM_DEFAULT_MAX_NUM_SEQS, table_from_steps, table_text
from tui.format import fmt_count, fmt_times

VLLM_KEY = "speculative.num_speculative_tokens"  # the only key whose schedule an engine takes as a table


@dataclass(frozen=True)
class TableOffer:
    table: list[list[int]]
    words: str  # "batch 1: k=3, 2-256: k=1 (k=3 1.21x over k=1 at load 1; k=1 1.15x over k=3 at load 8)"

    @property
    def ranges(self) -> str:
        """ "1: k=3, 2-256: k=1": the advice line's words for the table."""
        return table_text([(lo, hi, k) for lo, hi, k in self.table]).removeprefix("batch ")


def _beats(advice: Advice, k: int, other: int) -> float | None:
    """k's speed over `other`'s at this advice's load, when it clears the advice's threshold."""
    mine, theirs = advice.speedup_by_k.get(k), advice.speedup_by_k.get(other)
    if mine is None or not theirs:
        return None
    ratio = mine / theirs
    return ratio if ratio > 1.0 + advice.threshold else None


def table_offer(
    per_position: list[float] | None,
    current_k: int | None,
    model: StepCostModel | None,
    *,
    top: int = VLLM_DEFAULT_MAX_NUM_SEQS,
    margin: float = DEFAULT_MARGIN,
) -> TableOffer | None:
    """The table the model's calibrated loads call for, or None (no model measured over loads, no best k
    at some load, one k best everywhere, or a change of k within noise)."""
    if model is None or not model.load_dependent or not per_position:
        return None
    loads = sorted({max(1, round(load)) for load in model.loads})
    bests: list[tuple[int, int, Advice]] = []
    for load in loads:
        advice = advise(per_position, current_k, float(load), model, margin=margin)
        if advice.best_k is None:
            return None
        bests.append((load, advice.best_k, advice))
    if len({k for _, k, _ in bests}) < 2:
        return None
    reasons = []
    for (low, low_k, low_advice), (high, high_k, high_advice) in itertools.pairwise(bests):
        if low_k == high_k:
            continue
        below, above = _beats(low_advice, low_k, high_k), _beats(high_advice, high_k, low_k)
        if below is None or above is None:  # one of the two k is within noise of the best at both loads
            return None
        reasons.append(f"k={low_k} {fmt_times(below)} over k={high_k} at load {fmt_count(low)}")
        reasons.append(f"k={high_k} {fmt_times(above)} over k={low_k} at load {fmt_count(high)}")
    steps: list[tuple[int, int | None]] = []
    for index, (load, k, _) in enumerate(bests):
        last = index == len(bests) - 1
        if steps and steps[-1][0] == k:
            steps[-1] = (k, None if last else load)
        else:
            steps.append((k, None if last else load))
    table = table_from_steps(steps, max(top, loads[-1]))
    return TableOffer(table, f"{table_text([(lo, hi, k) for lo, hi, k in table])} ({'; '.join(reasons)})")
