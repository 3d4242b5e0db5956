"""A tune's result (the on-disk `spectop-tune/1` format), its analysis and its renderings."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from tui.bench.burst_store import BurstFileError, kept_files, kept_name, load_kept, save_kept
from tui.bench.context import counted_prompt_tokens
from tui.bench.report.export import write_export
from tui.bench.report.summary import arm_summary, sequential_words
from tui.bench.results import ArmResult
from tui.bench.stats import percentile, pooled_rate
from tui.configs.spec_table import table_from_steps, table_text
from tui.format import UNKNOWN as DASH
from tui.format import (
    fmt_latency,
    fmt_length,
    fmt_level,
    fmt_rate,
    fmt_times,
    fmt_times_interval,
    fmt_tokens,
    fmt_tokens_per_s,
)
from tui.sanitize import safe_line
from tui.tables import Table, markdown_escape
from tui.tables import render_json as json_text
from tui.tune.decision import Run, Speedups, TuneDecision, decide, speedups

CSV_FIELDS = (
    "value", "concurrency", "ok", "requests", "errors", "decode_tokens_per_s", "output_tokens_per_s",
    "ttft_p50_s", "ttft_p95_s", "tpot_p50_s", "acceptance_rate", "mean_acceptance_length",
    "per_position_acceptance", "speedup", "speedup_ci_low", "speedup_ci_high", "best", "failure",
    "burst_file", "label", "steps", "topk", "draft_tokens", "tied", "speedup_significant", "rounds",
    "client_ok", "prompt_tokens", "prompt_tokens_counted",
)  # fmt: skip


class SweepPoint(BaseModel):
    """One point of a grid sweep: the SGLang steps, topk and draft tokens written for `value`."""

    value: int
    steps: int
    topk: int
    draft_tokens: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        return f"steps {self.steps} · topk {self.topk} · draft {self.draft_tokens}"


class SkippedPoint(BaseModel):
    """A grid point that was not swept, and why (SGLang would not run it as written)."""

    steps: int
    topk: int
    draft_tokens: int
    reason: str

    def line(self) -> str:
        return f"steps {self.steps} · topk {self.topk} · draft {self.draft_tokens} skipped: {self.reason}"


class CellRun(BaseModel):
    """One burst of a cell: its round, its place on the timeline and its decode samples (to resample)."""

    round: int
    order: int
    samples: list[tuple[float, float]] = Field(default_factory=list)
    mean_acceptance_length: float | None = Field(None, description="this burst's own, for the step-cost fit")
    client_ok: bool | None = Field(None, description="False: the measuring client fell behind")
    client_reason: str | None = None
    burst_file: str | None = None


class TuneCell(BaseModel):
    """One value at one concurrency: every round's burst pooled."""

    value: int
    concurrency: int
    ok: bool = Field(description="the burst ran (some of its requests may still have failed)")
    requests: int = 0
    errors: int = 0
    decode_tokens_per_s: float | None = Field(None, description="pooled: Σ(tokens-1) / Σ(e2e-TTFT)")
    output_tokens_per_s: float | None = Field(None, description="aggregate: all output / active time")
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    tpot_p50_s: float | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position_acceptance: list[float] | None = None
    acceptance_note: str | None = None
    speedup: float | None = Field(None, description="decode tokens/s over the baseline at this concurrency")
    speedup_ci95: tuple[float, float] | None = None
    throughput_speedup: float | None = None
    failure: str | None = None
    burst_file: str | None = None
    speedup_significant: bool | None = Field(None, description="its interval excludes 1.0")
    runs: list[CellRun] = Field(default_factory=list)
    client_ok: bool | None = Field(None, description="False: the measuring client fell behind")
    client_reason: str | None = None
    prompt_tokens: int | None = Field(None, description="the context axis: the prompt length asked")
    prompt_tokens_counted: int | None = Field(None, description="the median the server counted")


class ValueOutcome(BaseModel):
    """One swept value: did the server start with it (and why not), and its cells."""

    value: int
    started: bool
    failure: str | None = None
    diff: str = ""
    restart_output: list[str] = Field(default_factory=list)
    cells: list[TuneCell] = Field(default_factory=list)


VLLM_TABLE_OWNER = "speculative.num_speculative_tokens"  # the key whose schedule vLLM takes as a table


class ScheduleStep(BaseModel):
    value: int
    up_to_concurrency: int | None = Field(description="None: beyond every measured load")


class AppliedChange(BaseModel):
    value: int
    concurrency: int
    diff: str
    table: list[list[int]] | None = Field(None, description="vLLM's per-batch-size table instead of one k")


class ContextDecision(TuneDecision):
    """The recommendation at one (concurrency, prompt length) bucket of the context axis."""

    prompt_tokens: int
    prompt_tokens_counted: int | None = Field(None, description="the median the server counted")


class ContextStop(BaseModel):
    """Where speculation stops paying along the context axis at one concurrency (`with_context_axis`)."""

    concurrency: int
    prompt_tokens: int | None = Field(description="the shortest measured context from which off wins")
    pays_up_to: int | None = Field(None, description="the longest context below it where it still pays")
    significant: bool | None = Field(None, description="every draft value is significantly slower there")
    reason: str | None = Field(None, description="why it cannot be known (None: known)")


class TuneResult(BaseModel):
    format: Literal["spectop-tune/1"] = "spectop-tune/1"
    started_at: datetime
    duration_s: float = 0.0
    config_file: str
    kind: str
    key: str
    endpoint: str
    restart_command: list[str]
    values: list[int]
    concurrencies: list[int]
    original_value: int | None
    baseline_value: int
    requests: int
    max_tokens: int | None
    prompts: str
    points: list[SweepPoint] = Field(default_factory=list, description="a grid's points; [] for one key")
    skipped: list[SkippedPoint] = Field(default_factory=list)
    outcomes: list[ValueOutcome] = Field(default_factory=list)
    best: dict[int, int | None] = Field(default_factory=dict, description="concurrency -> best value")
    schedule: list[ScheduleStep] = Field(default_factory=list)
    break_even_concurrency: int | None = Field(None, description="lowest load where speculation off wins")
    decisions: list[TuneDecision] = Field(default_factory=list)
    zero_is_off: bool = Field(True, description="value 0 is speculation off (not so for a plain key)")
    rounds: int = Field(1, description="rounds planned (each a pass over every value)")
    rounds_run: int = 0
    ci_level: float = Field(0.95, description="every interval's level (Bonferroni-split if sequential)")
    looks: int = Field(1, description="how many times the data were looked at to decide when to stop")
    until_separated: bool = False
    stop_reason: str | None = None
    apply_note: str | None = Field(None, description="why --apply wrote or kept the file")
    applied: AppliedChange | None = None
    restored: bool = False
    final_restart_ok: bool | None = None
    final_restart_waited: bool = Field(True, description="False: after a signal, not waited for")
    cancelled: bool = False
    notes: list[str] = Field(default_factory=list)
    prompt_tokens: list[int] = Field(default_factory=list, description="the context axis ([]: none)")
    context_decisions: list[ContextDecision] = Field(default_factory=list)
    context_stops: list[ContextStop] = Field(default_factory=list)

    @property
    def primary_context(self) -> int | None:
        """The prompt length the per-concurrency decisions are made at: the first of the context axis."""
        return self.prompt_tokens[0] if self.prompt_tokens else None

    def cell(self, value: int, concurrency: int, prompt_tokens: int | None = None) -> TuneCell | None:
        here = (concurrency, self.primary_context if prompt_tokens is None else prompt_tokens)
        outcome = self.outcome(value)  # one per value
        cells = outcome.cells if outcome is not None else []
        return next((cell for cell in cells if (cell.concurrency, cell.prompt_tokens) == here), None)

    def outcome(self, value: int) -> ValueOutcome | None:
        return next((outcome for outcome in self.outcomes if outcome.value == value), None)

    def point(self, value: int) -> SweepPoint | None:
        return next((point for point in self.points if point.value == value), None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def best_points(self) -> dict[int, SweepPoint]:
        """A grid's recommendation with its parts: concurrency -> the best point (speculation off: absent)."""
        return {
            c: point for c, value in self.best.items() if value is not None and (point := self.point(value))
        }

    def cost(self, value: int) -> float:
        """Draft tokens a value asks for (ties are broken by it); 0 for speculation off."""
        if not self.points:
            return float(value)
        point = self.point(value)
        return 0.0 if point is None else float(point.draft_tokens)

    def decision(self, concurrency: int) -> TuneDecision | None:
        return next((d for d in self.decisions if d.concurrency == concurrency), None)

    def context_decision(self, concurrency: int, prompt_tokens: int | None) -> TuneDecision | None:
        here = (concurrency, prompt_tokens)
        return next((d for d in self.context_decisions if (d.concurrency, d.prompt_tokens) == here), None)

    def name(self, value: int) -> str:
        """How a value reads in a sentence: "k=2", or a grid's "steps 3 · topk 1 · draft 4" / "off"."""
        if not self.points:
            return f"k={value}"
        point = self.point(value)
        return point.label if point is not None else "off" if value == 0 else f"point {value}"


def cell_from_arm(value: int, concurrency: int, arm: ArmResult, prompt_tokens: int | None) -> TuneCell:
    """One burst's cell; acceptance and per position from the same scrapes: the engine's, around the burst."""
    summary = arm_summary(arm, with_detail=False)
    counted = sorted(counted_prompt_tokens(arm))
    ok = [r for r in arm.requests if r.ok]
    ttfts = sorted(r.ttft_s for r in ok if r.ttft_s is not None)
    samples = [sample for r in arm.requests if (sample := r.decode_sample())]
    return TuneCell(
        value=value,
        concurrency=concurrency,
        ok=True,
        requests=summary.requests,
        errors=summary.errors,
        decode_tokens_per_s=pooled_rate(samples),
        output_tokens_per_s=summary.output_tokens_per_s,
        ttft_p50_s=percentile(ttfts, 50),
        ttft_p95_s=percentile(ttfts, 95),
        tpot_p50_s=summary.tpot_s.p50,
        acceptance_rate=summary.acceptance_rate,
        mean_acceptance_length=summary.mean_acceptance_length,
        acceptance_note=summary.acceptance_note,
        per_position_acceptance=arm.server.per_position_acceptance,
        prompt_tokens=prompt_tokens,
        prompt_tokens_counted=counted[len(counted) // 2] if counted else None,
    )


def merged_cell(earlier: TuneCell | None, cell: TuneCell, run: CellRun) -> TuneCell:
    """`cell` folded into the earlier rounds' cell: the decode rate pooled, the rest the latest round's."""
    runs = [*(earlier.runs if earlier else []), run]
    samples = [tuple(sample) for r in runs for sample in r.samples]
    client_bad = [r for r in runs if r.client_ok is False]
    return cell.model_copy(
        update={
            "runs": runs,
            "requests": cell.requests + (earlier.requests if earlier else 0),
            "errors": cell.errors + (earlier.errors if earlier else 0),
            "decode_tokens_per_s": pooled_rate([(a, d) for a, d in samples]),
            "burst_file": run.burst_file or cell.burst_file,
            "client_ok": (not client_bad) if any(r.client_ok is not None for r in runs) else None,
            "client_reason": client_bad[-1].client_reason if client_bad else None,
        }
    )


def _runs_at(result: TuneResult, concurrency: int) -> list[Run]:
    return [
        Run(outcome.value, run.order, run.round, tuple((float(a), float(d)) for a, d in run.samples))
        for outcome in result.outcomes
        if (cell := result.cell(outcome.value, concurrency))
        for run in cell.runs
    ]


def _decision(result: TuneResult, concurrency: int) -> tuple[TuneDecision, Speedups]:
    runs = _runs_at(result, concurrency)
    if runs:
        found = speedups(runs, result.baseline_value)
        made = decide(found, concurrency, result.cost, result.ci_level)
    else:  # no samples to resample (cells kept by an older spectop): the fastest point estimate, no intervals
        rates = {
            outcome.value: cell.decode_tokens_per_s
            for outcome in result.outcomes
            if (cell := result.cell(outcome.value, concurrency)) and cell.decode_tokens_per_s is not None
        }
        found = Speedups(baseline=result.baseline_value)
        base_rate = rates.get(result.baseline_value)
        if base_rate:
            found.point = {value: rate / base_rate for value, rate in rates.items()}
        fastest = max(rates, key=lambda v: (rates[v], -result.cost(v))) if rates else None
        point = found.point.get(fastest) if fastest is not None else None
        tied = [fastest] if fastest is not None else []
        made = TuneDecision(concurrency=concurrency, best=fastest, fastest=fastest, tied=tied, speedup=point)
    cells = [cell for value in made.tied if (cell := result.cell(value, concurrency))]
    known = any(cell.client_ok is not None for cell in cells)
    client_ok = all(cell.client_ok is not False for cell in cells) if known else None
    return made.model_copy(update={"client_ok": client_ok}), found


def analyse(result: TuneResult) -> TuneResult:
    """Per concurrency: every value's speedup and interval, the tie set, the pick; schedule and break-even."""
    decisions: list[TuneDecision] = []
    outcomes = [outcome.model_copy(deep=True) for outcome in result.outcomes]
    updated = result.model_copy(update={"outcomes": outcomes})
    for concurrency in result.concurrencies:
        decision, found = _decision(updated, concurrency)
        decisions.append(decision)
        here = (concurrency, result.primary_context)
        for outcome in outcomes:
            for index, cell in enumerate(outcome.cells):
                if (cell.concurrency, cell.prompt_tokens) != here or not cell.runs:
                    continue
                point = found.point.get(outcome.value)  # the baseline's is 1.0, with no interval
                ci = None
                if point is not None and outcome.value != result.baseline_value:
                    ci = found.interval(outcome.value, result.ci_level)
                outcome.cells[index] = cell.model_copy(
                    update={
                        "speedup": point,
                        "speedup_ci95": ci,
                        "speedup_significant": None if ci is None else not ci[0] <= 1.0 <= ci[1],
                    }
                )
    best = {d.concurrency: d.best for d in decisions}
    ordered = sorted(c for c in result.concurrencies if best.get(c) is not None)
    steps = [(value, [*loads][-1]) for value, loads in itertools.groupby(ordered, key=best.__getitem__)]
    schedule = [  # the same value over consecutive loads is one step; the last runs beyond every load
        ScheduleStep(value=value, up_to_concurrency=None if index == len(steps) - 1 else load)
        for index, (value, load) in enumerate(steps)
        if value is not None
    ]
    break_even = None
    if result.baseline_value == 0 and result.zero_is_off:
        # the lowest load from which the recommendation is speculation off at every higher measured load
        off_from = (c for i, c in enumerate(ordered) if all(best[higher] == 0 for higher in ordered[i:]))
        break_even = next(off_from, None)
    # with a context axis, with_context_axis adds each bucket's decision
    update = {
        "best": best,
        "schedule": schedule,
        "break_even_concurrency": break_even,
        "decisions": decisions,
    }
    return updated.model_copy(update=update)


# The context axis (`--prompt-tokens`): `--apply` writes only the answer at the first prompt length.
NOT_WRITTEN = (
    "the best value by context is not written: no engine takes a context-keyed setting yet (vLLM's "
    "RFC #48627 and PR #54801 are open)"
)


def analyse_all(result: TuneResult) -> TuneResult:
    """`analyse`, and with a context axis every bucket's decision and where speculation stops paying."""
    analysed = analyse(result)
    return with_context_axis(analysed) if len(result.prompt_tokens) > 1 else analysed


def with_context_axis(result: TuneResult) -> TuneResult:
    """`result` with every context bucket's decision and where speculation stops paying."""
    decisions: list[ContextDecision] = []
    cells = {
        outcome.value: [c for c in outcome.cells if c.prompt_tokens == result.primary_context]
        for outcome in result.outcomes
    }
    for tokens in result.prompt_tokens:
        only = [  # the sweep at this prompt length only, as if it had been run alone
            outcome.model_copy(update={"cells": [c for c in outcome.cells if c.prompt_tokens == tokens]})
            for outcome in result.outcomes
        ]
        alone = analyse(result.model_copy(update={"outcomes": only, "prompt_tokens": [tokens]}))
        for outcome in alone.outcomes:
            if tokens != result.primary_context:
                cells.setdefault(outcome.value, []).extend(outcome.cells)
        for decision in alone.decisions:
            counts = sorted(  # the median the server counted
                cell.prompt_tokens_counted
                for outcome in alone.outcomes
                if (cell := alone.cell(outcome.value, decision.concurrency, tokens))
                and cell.prompt_tokens_counted is not None
            )
            counted = counts[len(counts) // 2] if counts else None
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
    """The shortest prompt length from which off is the pick at every longer one."""
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


def apply_decision(result: TuneResult, concurrency: int) -> tuple[int | None, str]:
    """(the value `--apply` writes, or None; why): only when significantly faster than the file's own."""
    decision = result.decision(concurrency)
    if decision is None or decision.best is None:
        return None, f"nothing measured at concurrency {concurrency}: the file is kept"
    best, own = decision.best, result.original_value
    name = result.name(best)
    words = sequential_words(result.ci_level, result.looks)
    if decision.client_ok is False:
        return None, f"the measuring client fell behind at concurrency {concurrency}: the file is kept"
    if own is None:
        if decision.beats_baseline:
            return best, f"{name} is significantly faster than {result.name(result.baseline_value)}"
        return None, f"the file has no value of its own and {name} does not beat the baseline: file kept"
    if best == own:
        return None, f"the file's own {result.name(own)} is the recommendation: the file is kept"
    runs = _runs_at(result, concurrency)
    if not runs or result.cell(own, concurrency) is None:
        return None, f"the file's own {result.name(own)} was not measured at concurrency {concurrency}: kept"
    found = speedups(runs, result.baseline_value)
    ratio, interval = found.pair_point(best, own), found.pair_interval(best, own, result.ci_level)
    measured = f"{fmt_times(ratio)}, {words} {fmt_times_interval(interval)}"
    if interval is not None and interval[0] > 1.0:
        return best, f"{name} is significantly faster than the file's own {result.name(own)} ({measured})"
    return None, (
        f"{name} is not significantly faster than the file's own {result.name(own)} ({measured}): "
        "the file is kept"
    )


def _faster_at(result: TuneResult, concurrency: int, value: int, other: int) -> bool:
    """`value` is significantly faster than `other` at this load (their ratio's interval above 1)."""
    runs = _runs_at(result, concurrency)
    if not runs:
        return False
    interval = speedups(runs, result.baseline_value).pair_interval(value, other, result.ci_level)
    return interval is not None and interval[0] > 1.0


def table_decision(result: TuneResult, top: int) -> tuple[list[list[int]] | None, str]:
    """(vLLM's k-by-batch-size table, or None; why): only when each boundary is significant."""
    if result.kind != "vllm_toml" or result.key != VLLM_TABLE_OWNER:
        return None, "only vLLM's num_speculative_tokens takes a table by batch size"
    steps = result.schedule
    if len(steps) < 2:
        return None, "one k is best at every measured load"
    if any(d.client_ok is False for d in result.decisions):
        return None, "the measuring client fell behind at some load: no table"
    loads = sorted(c for c in result.concurrencies if result.best.get(c) is not None)
    for before, after in itertools.pairwise(steps):
        assert before.up_to_concurrency is not None  # only the last step runs beyond every load
        low = before.up_to_concurrency
        high = loads[loads.index(low) + 1]
        if not (
            _faster_at(result, low, before.value, after.value)
            and _faster_at(result, high, after.value, before.value)
        ):
            words = sequential_words(result.ci_level, result.looks)
            return None, (
                f"the best k changes between concurrency {low} and {high} ({result.name(before.value)} → "
                f"{result.name(after.value)}) but one of them is within noise of the other at both ({words})"
            )
    table = table_from_steps([(step.value, step.up_to_concurrency) for step in steps], max(top, loads[-1]))
    ranges = [(lo, hi, k) for lo, hi, k in table]
    return table, f"the best k differs significantly between loads: {table_text(ranges)}"


def _speedup(cell: TuneCell) -> str:
    if cell.speedup is None:
        return DASH
    text = fmt_times(cell.speedup)
    if cell.speedup_ci95 is not None:
        text += f" ({fmt_times_interval(cell.speedup_ci95)})"
    return text + ("!" if cell.client_ok is False else "")


def value_label(result: TuneResult, value: int) -> str:
    tags = [
        tag for tag, own in (("base", result.baseline_value), ("file", result.original_value)) if value == own
    ]
    text = result.name(value) if result.points else f"{value}"
    return text + (f" ({', '.join(tags)})" if tags else "")


def schedule_text(result: TuneResult) -> str:
    if not result.schedule:
        return "no schedule: no value was measured"
    if len(result.schedule) == 1:
        return f"{result.name(result.schedule[0].value)} at every measured concurrency"
    return ", ".join(
        f"{result.name(step.value)} "
        + ("beyond" if step.up_to_concurrency is None else f"up to {step.up_to_concurrency}")
        for step in result.schedule
    )


def break_even_text(result: TuneResult) -> str:
    if not result.zero_is_off and 0 in result.values:
        return (
            f"break-even: unknown ({result.key} = 0 is not speculation off for this file: e.g. llama.cpp "
            "with a draft model still drafts at --spec-draft-n-max 0)"
        )
    if result.baseline_value != 0:
        return "break-even: unknown (the baseline is not speculation off: sweep value 0 for it)"
    ordered = sorted(c for c in result.concurrencies if result.best.get(c) is not None)
    if result.break_even_concurrency is None:
        off = [c for c in ordered if result.best.get(c) == 0]
        if off:
            paying = [c for c in ordered if c > off[-1]]
            return (
                f"break-even: none (speculation off is the pick at {', '.join(map(str, off))}, "
                f"but speculation pays again at {', '.join(map(str, paying))})"
            )
        return "break-even: speculation pays at every measured concurrency"
    paying = [c for c in ordered if c < result.break_even_concurrency]
    below = f" (it still pays at {paying[-1]})" if paying else ""
    return f"break-even: speculation stops paying at concurrency {result.break_even_concurrency}{below}"


def decision_lines(result: TuneResult, decision: TuneDecision) -> list[str]:
    """ "best at concurrency 1: k=2, 1.52x (95% CI 1.40-1.66) over k=0" and its tie and client lines."""
    concurrency, value = decision.concurrency, decision.best
    if value is None:
        return [f"best at concurrency {concurrency}: {DASH} (nothing measured)"]
    line = f"best at concurrency {concurrency}: {result.name(value)}"
    words = f"{fmt_level(result.ci_level)} CI"
    if value == result.baseline_value:
        line += " (the baseline)"
    elif decision.speedup is not None:
        interval = f"{words} {fmt_times_interval(decision.ci)}"
        line += f", {fmt_times(decision.speedup)} ({interval}) over {result.name(result.baseline_value)}"
        if decision.beats_baseline is False:
            line += ", not significant"
    lines = [line]
    tied = decision.tied
    if len(tied) > 1:
        fewer = "fewer" if len(tied) == 2 else "the fewest"
        *others, last = [result.name(member) for member in tied]
        names = f"{', '.join(others)} and {last}"
        lines.append(f"  {names} are within noise; {result.name(value)} uses {fewer} draft tokens")
    elif decision.significant and len(result.outcomes) > 1:
        lines.append(f"  {result.name(value)} is separated from every other value")
    elif decision.ci is None and value != result.baseline_value:
        lines.append("  no interval: too few requests")
    if decision.client_ok is False:
        lines.append("  !!! UNRELIABLE: the measuring client fell behind at this load")
    return lines


def summary_lines(result: TuneResult) -> list[str]:
    lines = []
    for concurrency in result.concurrencies:
        nothing = TuneDecision(concurrency=concurrency, best=None)  # "nothing measured"
        lines += decision_lines(result, result.decision(concurrency) or nothing)
    lines += ["schedule: " + schedule_text(result), break_even_text(result)]
    lines += [context_stop_line(stop) for stop in result.context_stops]
    rounds = f"{result.rounds_run} round{'s' if result.rounds_run != 1 else ''}"
    why = f" ({result.stop_reason})" if result.stop_reason else ""
    words = sequential_words(result.ci_level, result.looks)
    lines += [
        f"rounds: {rounds}{why}",
        f"  intervals: {words} over rounds, the baselines before and after, requests",
    ]
    if result.apply_note:
        lines.append(f"--apply: {result.apply_note}")
    for outcome in result.outcomes:
        if not outcome.started:
            lines.append(f"{result.name(outcome.value)} failed: {outcome.failure or 'no reason known'}")
        for cell in outcome.cells:
            if cell.client_ok is False:
                lines.append(
                    f"!!! {result.name(outcome.value)} at c={cell.concurrency}: the measuring client fell "
                    f"behind ({cell.client_reason or 'see the burst'}); its figures are unreliable"
                )
    lines += [skipped.line() for skipped in result.skipped]
    return lines


def context_stop_line(stop: ContextStop) -> str:
    """Where speculation stops paying along the context axis, or why it cannot be said."""
    where = f"context at concurrency {stop.concurrency}"
    if stop.reason is not None:
        return f"{where}: speculation stops paying at {DASH} ({stop.reason})"
    if stop.prompt_tokens is None:
        pays = fmt_tokens(stop.pays_up_to)
        return f"{where}: speculation pays at every measured prompt length (up to {pays})"
    line = f"{where}: speculation stops paying at {fmt_tokens(stop.prompt_tokens)} prompt tokens"
    if stop.pays_up_to is not None:
        line += f" (it pays at {fmt_tokens(stop.pays_up_to)})"
    if stop.significant:
        return line + "; every draft value is significantly slower there"
    return line + "; within noise: some draft value is not significantly slower there"


def context_table(result: TuneResult) -> Table:
    """Per (concurrency, prompt length): the prompt tokens counted, the pick and its speedup."""
    rows = []
    for decision in result.context_decisions:
        pick = DASH if decision.best is None else result.name(decision.best)
        if decision.best is not None and decision.best != result.baseline_value:
            pick += f" {fmt_times(decision.speedup)} ({fmt_times_interval(decision.ci)})"
            pick += "" if decision.significant else " tied"
        counted = fmt_tokens(decision.prompt_tokens_counted)
        rows.append([str(decision.concurrency), fmt_tokens(decision.prompt_tokens), counted, pick])
    return Table(["c", "prompt tokens", "counted", "best (speedup, CI)"], rows)


CellText = Callable[[ValueOutcome, TuneCell | None], str]


def _rate_and_speedup(outcome: ValueOutcome, cell: TuneCell | None, markdown: bool = False) -> str:
    if not outcome.started:
        return "failed to start"
    if cell is None or not (cell.ok or markdown):
        return "failed" if cell else DASH
    speedup = f"({_speedup(cell)})" if markdown else _speedup(cell)
    return f"{fmt_tokens_per_s(cell.decode_tokens_per_s)} {speedup}"


def _speedup_table(result: TuneResult, column: str, cell_text: CellText) -> Table:
    """Per value (row) and concurrency (column): decode tokens/s and the speedup."""
    rows = [
        [value_label(result, outcome.value)]
        + [cell_text(outcome, result.cell(outcome.value, c)) for c in result.concurrencies]
        for outcome in result.outcomes
    ]
    return Table(["value", *(column.format(c) for c in result.concurrencies)], rows)


def _acceptance_rows(result: TuneResult, name: Callable[[int], str]) -> list[list[str]]:
    """Per value and concurrency: acceptance, mean acceptance length, TTFT and acceptance per position."""
    return [
        [
            name(outcome.value), str(cell.concurrency), fmt_rate(cell.acceptance_rate),
            fmt_length(cell.mean_acceptance_length), fmt_latency(cell.ttft_p50_s),
            fmt_latency(cell.ttft_p95_s),
            " ".join(fmt_rate(p) for p in cell.per_position_acceptance or []) or DASH,
        ]
        for outcome in result.outcomes
        for cell in outcome.cells
        if cell.prompt_tokens == result.primary_context
    ]  # fmt: skip


def render_text(result: TuneResult) -> str:
    """Decode tokens/s and speedup per value × concurrency, acceptance per value, the verdict."""
    label = max([12] + [len(value_label(result, outcome.value)) + 2 for outcome in result.outcomes])
    speedups = _speedup_table(result, "c={} tok/s, speedup", _rate_and_speedup)
    acceptance = _acceptance_rows(result, lambda value: value_label(result, value))
    columns = ["value", "c", "accept", "length", "TTFT p50", "p95", "  per position %"]
    rows = [[*row[:-1], f"  {row[-1]}"] for row in acceptance]
    lines = [f"spectop tune {result.config_file}: {result.key} on {result.endpoint}", ""]
    lines += speedups.text([label] + [24] * len(result.concurrencies))
    lines += ["", *Table(columns, rows).text([label, 5, 8, 8, 10, 8, 0])]
    if result.context_decisions:
        lines += ["", "by context:", *context_table(result).text(gap="  ", left=(3,))]
    lines += ["", *summary_lines(result), *result.notes]
    return "\n".join(safe_line(line) for line in lines)


def render_markdown(result: TuneResult) -> str:
    key, config_file = markdown_escape(result.key), markdown_escape(result.config_file)
    started = result.started_at.isoformat()
    lines = ["# spectop tune", "", f"`{key}` in `{config_file}` on {result.endpoint}, started {started}", ""]
    lines += _speedup_table(result, "c={} decode tok/s", partial(_rate_and_speedup, markdown=True)).markdown()
    columns = ["value", "c", "acceptance", "mean length", "TTFT p50", "TTFT p95", "per position %"]
    rows = _acceptance_rows(result, lambda value: result.name(value) if result.points else str(value))
    lines += ["", *Table(columns, rows).markdown()]
    if result.context_decisions:
        lines += ["", *context_table(result).markdown()]
    lines += [""] + [f"- {markdown_escape(line)}" for line in summary_lines(result) + list(result.notes)]
    return "\n".join(safe_line(line) for line in lines) + "\n"


def _csv_record(result: TuneResult, outcome: ValueOutcome, cell: TuneCell) -> dict[str, object]:
    ci, point = cell.speedup_ci95, result.point(outcome.value)
    decision = result.decision(cell.concurrency)
    if cell.prompt_tokens != result.primary_context:
        decision = result.context_decision(cell.concurrency, cell.prompt_tokens)
    return {
        "value": cell.value, "concurrency": cell.concurrency, "ok": cell.ok and outcome.started,
        "requests": cell.requests, "errors": cell.errors, "decode_tokens_per_s": cell.decode_tokens_per_s,
        "output_tokens_per_s": cell.output_tokens_per_s, "ttft_p50_s": cell.ttft_p50_s,
        "ttft_p95_s": cell.ttft_p95_s, "tpot_p50_s": cell.tpot_p50_s, "acceptance_rate": cell.acceptance_rate,
        "mean_acceptance_length": cell.mean_acceptance_length,
        "per_position_acceptance": " ".join(f"{p:.4f}" for p in cell.per_position_acceptance or []),
        "speedup": cell.speedup, "speedup_ci_low": ci and ci[0], "speedup_ci_high": ci and ci[1],
        "best": decision is not None and decision.best == cell.value,
        "failure": cell.failure or outcome.failure,
        "burst_file": cell.burst_file, "label": result.name(outcome.value) if result.points else "",
        "steps": point and point.steps, "topk": point and point.topk,
        "draft_tokens": point and point.draft_tokens,
        "tied": cell.value in (decision.tied if decision else []),
        "speedup_significant": cell.speedup_significant, "rounds": len(cell.runs),
        "client_ok": cell.client_ok, "prompt_tokens": cell.prompt_tokens,
        "prompt_tokens_counted": cell.prompt_tokens_counted,
    }  # fmt: skip


def render_csv(result: TuneResult) -> str:
    records = (
        _csv_record(result, outcome, cell)
        for outcome in result.outcomes
        for cell in outcome.cells
        or [TuneCell(value=outcome.value, concurrency=c, ok=False) for c in result.concurrencies]
    )
    return Table.of_records(CSV_FIELDS, records).csv()


def render_json(result: TuneResult) -> str:
    return json_text(result.model_dump(mode="json"))


def export(result: TuneResult, kind: str, path: Path) -> Path:
    return write_export(
        result, kind, path, {"json": render_json, "csv": render_csv, "markdown": render_markdown}
    )


def tune_file_name(result: TuneResult) -> str:
    return kept_name("tune", result.started_at)


def save_tune(result: TuneResult, folder: Path | None = None) -> Path:
    """Kept beside the bursts (`$XDG_DATA_HOME/spectop/bursts/tune-*.json`); its cells name their bursts."""
    return save_kept(result, tune_file_name(result), folder)


def load_tune(path: Path) -> TuneResult:
    return load_kept(TuneResult, path)


def list_tunes(folder: Path | None = None) -> list[Path]:
    return kept_files("tune", folder)


def tune_history_lines(folder: Path | None = None, limit: int = 50) -> list[str]:
    """`spectop bench --history`'s tunes: when, the key and values, rounds, the pick per load, the file."""
    lines = []
    for path in list_tunes(folder)[:limit]:
        try:
            result = load_tune(path)
        except BurstFileError:
            continue
        picks = ", ".join(
            f"c={d.concurrency}: {result.name(d.best)}" + ("" if d.significant else " (tied)")
            for d in result.decisions
            if d.best is not None
        )
        values = ",".join(str(value) for value in result.values)
        head = f"tune {result.started_at:%Y-%m-%d %H:%M}  {result.key} {values}  {result.rounds_run} rounds"
        lines += [safe_line(f"{head}  best {picks or DASH}"), f"  {safe_line(str(path))}"]
    return ["tunes (each with its bursts inside)", *lines] if lines else []
