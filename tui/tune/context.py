"""The context axis of a tune (`--prompt-tokens 256,4096,16384`): the best value per (concurrency, prompt
length) bucket, each analysed as a sweep of its own, and the context where speculation stops paying.

No engine takes a context-keyed setting yet (vLLM: RFC #48627, PR #54801, both open), so `--apply` writes
only the per-concurrency answer, at the first prompt length, and says so.
"""

from __future__ import annotations

from tui.format import UNKNOWN, fmt_times, fmt_times_interval
from tui.tables import Table
from tui.tune.result import ContextDecision, ContextStop, TuneResult, analyse

NOT_WRITTEN = (
    "the best value by context is not written: no engine takes a context-keyed setting yet (vLLM's "
    "RFC #48627 and PR #54801 are open)"
)


def _at(result: TuneResult, tokens: int) -> TuneResult:
    """The sweep at one prompt length only, as if it had been run alone."""
    outcomes = [
        outcome.model_copy(update={"cells": [c for c in outcome.cells if c.prompt_tokens == tokens]})
        for outcome in result.outcomes
    ]
    return result.model_copy(update={"outcomes": outcomes, "prompt_tokens": [tokens]})


def _counted(result: TuneResult, concurrency: int, tokens: int) -> int | None:
    counts = sorted(
        cell.prompt_tokens_counted
        for outcome in result.outcomes
        if (cell := result.cell(outcome.value, concurrency, tokens))
        and cell.prompt_tokens_counted is not None
    )
    return counts[len(counts) // 2] if counts else None


def with_context_axis(result: TuneResult) -> TuneResult:
    """`result` (analysed at its first prompt length) with every bucket's decision, the cells' speedups
    at their own prompt length, and where speculation stops paying per concurrency."""
    decisions: list[ContextDecision] = []
    cells = {
        outcome.value: [c for c in outcome.cells if c.prompt_tokens == result.primary_context]
        for outcome in result.outcomes
    }
    for tokens in result.prompt_tokens:
        alone = analyse(_at(result, tokens))
        for outcome in alone.outcomes:
            if tokens != result.primary_context:
                cells.setdefault(outcome.value, []).extend(outcome.cells)
        for decision in alone.decisions:
            counted = _counted(alone, decision.concurrency, tokens)
            decisions.append(
                ContextDecision(**decision.model_dump(), prompt_tokens=tokens, prompt_tokens_counted=counted)
            )
    outcomes = [
        outcome.model_copy(update={"cells": cells.get(outcome.value, [])}) for outcome in result.outcomes
    ]
    updated = result.model_copy(update={"outcomes": outcomes, "context_decisions": decisions})
    stops = [_stop(updated, concurrency) for concurrency in result.concurrencies]
    return updated.model_copy(update={"context_stops": stops})


def _stop(result: TuneResult, concurrency: int) -> ContextStop:
    """The shortest measured prompt length from which speculation off is the pick at every longer one;
    significant when, there, every draft value's interval lies below the baseline's."""
    if result.baseline_value != 0 or not result.zero_is_off:
        why = "the baseline is not speculation off (sweep value 0 for it)"
        return ContextStop(concurrency=concurrency, prompt_tokens=None, reason=why)
    picks = [
        (tokens, decision)
        for tokens in sorted(result.prompt_tokens)
        if (decision := result.context_decision(concurrency, tokens)) is not None
        and decision.best is not None
    ]
    if not picks:
        return ContextStop(concurrency=concurrency, prompt_tokens=None, reason="nothing measured")
    for index, (tokens, _decision) in enumerate(picks):
        if all(d.best == 0 for _, d in picks[index:]):
            pays = [t for t, d in picks[:index] if d.best != 0]
            speculative = [
                cell
                for outcome in result.outcomes
                if outcome.value != 0
                and (cell := result.cell(outcome.value, concurrency, tokens)) is not None
            ]
            below = [c.speedup_ci95 is not None and c.speedup_ci95[1] < 1.0 for c in speculative]
            return ContextStop(
                concurrency=concurrency,
                prompt_tokens=tokens,
                pays_up_to=pays[-1] if pays else None,
                significant=bool(below) and all(below),
            )
    return ContextStop(concurrency=concurrency, prompt_tokens=None, pays_up_to=picks[-1][0])


def stop_line(result: TuneResult, stop: ContextStop) -> str:
    """ "at concurrency 1 speculation stops paying at 16384 prompt tokens (it pays at 4096); every draft
    value is significantly slower there" or why it does not or cannot be said."""
    where = f"context at concurrency {stop.concurrency}"
    if stop.reason is not None:
        return f"{where}: speculation stops paying at {UNKNOWN} ({stop.reason})"
    if stop.prompt_tokens is None:
        return f"{where}: speculation pays at every measured prompt length (up to {stop.pays_up_to})"
    line = f"{where}: speculation stops paying at {stop.prompt_tokens} prompt tokens"
    if stop.pays_up_to is not None:
        line += f" (it pays at {stop.pays_up_to})"
    if stop.significant:
        return line + "; every draft value is significantly slower there"
    return line + "; within noise: some draft value is not significantly slower there"


def context_summary_lines(result: TuneResult) -> list[str]:
    return [stop_line(result, stop) for stop in result.context_stops]


def context_table(result: TuneResult) -> Table:
    """Per (concurrency, prompt length): the prompt tokens counted, the pick and its speedup."""
    rows = []
    for decision in result.context_decisions:
        pick = UNKNOWN if decision.best is None else result.name(decision.best)
        if decision.best is not None and decision.best != result.baseline_value:
            pick += f" {fmt_times(decision.speedup)} ({fmt_times_interval(decision.ci)})"
            pick += "" if decision.significant else " tied"
        counted = UNKNOWN if decision.prompt_tokens_counted is None else f"{decision.prompt_tokens_counted:,}"
        rows.append([str(decision.concurrency), f"{decision.prompt_tokens:,}", counted, pick])
    return Table(["c", "prompt tokens", "counted", "best (speedup, CI)"], rows)
