"""The context axis of a tune (`--prompt-tokens`): the best value per (concurrency, prompt length) and
where speculation stops paying. No engine takes a context-keyed setting yet, so `--apply` writes only the
per-concurrency answer, at the first prompt length."""

from __future__ import annotations

from tui.tune.result import ContextDecision, ContextStop, TuneResult, analyse

NOT_WRITTEN = (
    "the best value by context is not written: no engine takes a context-keyed setting yet (vLLM's "
    "RFC #48627 and PR #54801 are open)"
)


def analyse_all(result: TuneResult) -> TuneResult:
    """`analyse`, and with a context axis every bucket's decision and where speculation stops paying."""
    analysed = analyse(result)
    return with_context_axis(analysed) if len(result.prompt_tokens) > 1 else analysed


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
        why = "the baseline is not speculation off"
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
