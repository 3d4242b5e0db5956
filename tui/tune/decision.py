"""How sure a tune is: speedup intervals that cover drift, tie sets, the recommendation (cheapest tied)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from pydantic import BaseModel, Field

from tui.bench.stats import RateSample, percentile_interval, pooled_rate

RESAMPLES = 2000
ALPHA = 0.05


def sequential_level(looks: int) -> float:
    """The level of each look's interval so that `looks` looks together keep the error below ALPHA."""
    return 1.0 - ALPHA / max(1, looks)


@dataclass(frozen=True)
class Run:
    """One burst of one value at one load: its place on the timeline and its requests' decode samples."""

    value: int
    order: int
    round: int
    samples: tuple[RateSample, ...]


@dataclass
class Speedups:
    """Per value: the point speedup over the baseline and its bootstrap replicates (None: no decode time)."""

    baseline: int
    point: dict[int, float | None] = field(default_factory=dict)
    replicates: dict[int, list[float | None]] = field(default_factory=dict)

    def interval(self, value: int, level: float) -> tuple[float, float] | None:
        known = [r for r in self.replicates.get(value, []) if r is not None]
        return percentile_interval(known, len(self.replicates.get(value, [])), level)

    def pair_interval(self, value: int, other: int, level: float) -> tuple[float, float] | None:
        """The interval of speedup(value) / speedup(other), from the same replicates."""
        mine, theirs = self.replicates.get(value, []), self.replicates.get(other, [])
        ratios = [m / t for m, t in zip(mine, theirs, strict=False) if m is not None and t]
        return percentile_interval(ratios, min(len(mine), len(theirs)), level)

    def pair_point(self, value: int, other: int) -> float | None:
        mine, theirs = self.point.get(value), self.point.get(other)
        return mine / theirs if mine is not None and theirs else None


def _brackets(order: int, baseline_orders: Sequence[int]) -> tuple[int, ...]:
    """The baseline bursts measured nearest before and after `order` (one of them at the ends)."""
    before = [o for o in baseline_orders if o < order]
    after = [o for o in baseline_orders if o > order]
    return tuple(([max(before)] if before else []) + ([min(after)] if after else []))


def _sums(samples: Sequence[RateSample]) -> tuple[float, float]:
    return sum(a for a, _ in samples), sum(d for _, d in samples)


def _burst_spread(base_runs: Sequence[Run]) -> list[float]:
    """|log ratio| / √2 of every two consecutive baseline bursts: one burst's drift."""
    rates = [pooled_rate(list(run.samples)) for run in base_runs]
    known = [rate for rate in rates if rate]
    return [abs(math.log(b / a)) / math.sqrt(2.0) for a, b in pairwise(known)]


def speedups(runs: Sequence[Run], baseline: int) -> Speedups:
    """Each value's speedup over `baseline` at one concurrency: its pooled decode rate over that of the
    baseline bursts that bracket it, bootstrapped over rounds, those bursts, requests and the baseline's
    burst-to-burst drift; all values share the draws, so two values' replicates divide (`pair_interval`)."""
    result = Speedups(baseline=baseline)
    base_runs = {run.order: run for run in runs if run.value == baseline and run.samples}
    base_orders = sorted(base_runs)
    values = sorted({run.value for run in runs if run.value != baseline})
    bracketed = [(run, _brackets(run.order, base_orders)) for run in runs if run.samples]
    own = {value: [(run, b) for run, b in bracketed if run.value == value and b] for value in values}
    if base_orders:
        result.point[baseline] = 1.0
        result.replicates[baseline] = [1.0] * RESAMPLES
    for value in values:
        placed = own[value]
        if not placed:
            result.point[value] = None
            continue
        mine = pooled_rate([s for run, _ in placed for s in run.samples])
        refs = sorted({order for _, brackets in placed for order in brackets})
        theirs = pooled_rate([s for order in refs for s in base_runs[order].samples])
        result.point[value] = mine / theirs if mine is not None and theirs else None
        result.replicates[value] = []
    if not base_orders:
        return result
    rng = random.Random(0)
    rounds = sorted({run.round for placed in own.values() for run, _ in placed})
    every = {**base_runs, **{run.order: run for placed in own.values() for run, _ in placed}}
    spread = _burst_spread([base_runs[order] for order in base_orders])
    value_orders = [run.order for placed in own.values() for run, _ in placed]
    for _ in range(RESAMPLES):
        sums = {order: _sums(rng.choices(run.samples, k=len(run.samples))) for order, run in every.items()}
        if spread:  # each value burst's own drift, borrowed from the baseline's
            for order in value_orders:
                a, d = sums[order]
                sums[order] = (a * math.exp(rng.choice((-1.0, 1.0)) * rng.choice(spread)), d)
        picked = rng.choices(rounds, k=len(rounds)) if rounds else []
        chosen: dict[tuple[int, tuple[int, ...]], tuple[int, ...]] = {}
        for value in values:
            by_round = {run.round: (run, brackets) for run, brackets in own[value]}
            amount = duration = base_amount = base_duration = 0.0
            for slot, number in enumerate(picked):
                if number not in by_round:
                    continue
                run, brackets = by_round[number]
                key = (slot, brackets)
                if key not in chosen:  # one draw per picked round, shared by every value in it
                    chosen[key] = tuple(rng.choices(brackets, k=len(brackets)))
                a, d = sums[run.order]
                amount, duration = amount + a, duration + d
                for order in chosen[key]:
                    a, d = sums[order]
                    base_amount, base_duration = base_amount + a, base_duration + d
            known = duration > 0 and base_duration > 0 and base_amount > 0
            result.replicates[value].append(
                (amount / duration) / (base_amount / base_duration) if known else None
            )
    return result


class TuneDecision(BaseModel):
    """The recommendation at one concurrency with its uncertainty (`--json`'s `decisions`)."""

    concurrency: int
    best: int | None = Field(description="the recommendation: the cheapest value of the tie set")
    tied: list[int] = Field(default_factory=list, description="not significantly slower than the fastest")
    speedup: float | None = Field(None, description="the recommendation's speedup over the baseline")
    ci: tuple[float, float] | None = None
    significant: bool = Field(False, description="the recommendation is separated from every other value")
    fastest: int | None = Field(None, description="the highest point estimate (may be within noise)")
    beats_baseline: bool | None = Field(None, description="its interval lies above 1.0")
    client_ok: bool | None = Field(None, description="False: a burst at this load had a starved client")


def decide(found: Speedups, concurrency: int, cost: Callable[[int], float], level: float) -> TuneDecision:
    measured = [value for value, point in found.point.items() if point is not None]
    if not measured:
        return TuneDecision(concurrency=concurrency, best=None)
    fastest = max(measured, key=lambda v: (found.point[v] or 0.0, -cost(v)))
    intervals = {value: found.pair_interval(value, fastest, level) for value in measured if value != fastest}
    # unknown counts as not separated
    tied = [fastest, *(value for value, ci in intervals.items() if ci is None or ci[1] >= 1.0)]
    tied.sort(key=lambda v: (cost(v), -(found.point[v] or 0.0)))
    best = tied[0]
    ci = found.interval(best, level) if best != found.baseline else None
    beats = None if best == found.baseline or ci is None else ci[0] > 1.0
    return TuneDecision(
        concurrency=concurrency,
        best=best,
        fastest=fastest,
        tied=tied,
        speedup=found.point.get(best),
        ci=ci,
        significant=len(tied) == 1,
        beats_baseline=beats,
    )
