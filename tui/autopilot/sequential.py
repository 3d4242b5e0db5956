"""The sequential test: is the changed server faster, on per-interval samples of log(changed / reference)?
An always-valid 95% confidence sequence on the samples' mean (the asymptotic CS of Waudby-Smith et al.,
"Time-uniform central limit theory", 2021): it may be looked at after every interval and stopped as soon
as it is clear, without inflating the error. `sureness` is the largest level at which the verdict still
holds: how sure the test is."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tui.format import fmt_level, fmt_rate_delta

Verdict = Literal["better", "worse", "no difference", "inconclusive", "not worse"]
LEVEL = 0.95
MIN_SAMPLES = 8  # the spread of fewer samples says too little
TIGHTEST_AT = 30  # the sequence is tightest around this many samples


def radius(samples: Sequence[float], alpha: float) -> float:
    """The half-width of the confidence sequence at `len(samples)` (infinite below MIN_SAMPLES)."""
    n = len(samples)
    if n < MIN_SAMPLES:
        return math.inf
    mean = sum(samples) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in samples) / (n - 1))
    log_alpha = -2.0 * math.log(alpha)
    rho2 = (log_alpha + math.log(log_alpha + 1.0)) / TIGHTEST_AT
    spread = 2.0 * (n * rho2 + 1.0) / (n * n * rho2) * math.log(math.sqrt(n * rho2 + 1.0) / alpha)
    return max(sd, 1e-6) * math.sqrt(spread)


@dataclass(frozen=True)
class Judgement:
    """The test after `n` samples: the gain (changed / reference - 1) and its always-valid interval."""

    verdict: Verdict
    n: int
    gain: float | None
    low: float | None
    high: float | None
    sureness: float | None  # the largest confidence at which the verdict holds (None: undecided)

    def words(self) -> str:
        """ "better: +8.1% (95% +3.0% to +13.4%, 12 intervals; sure at 99.6%)"."""
        if self.gain is None:
            return f"{self.verdict}: no samples"
        shown = f"{self.verdict}: {fmt_rate_delta(self.gain)}"
        if self.low is None or self.high is None:
            return f"{shown} ({self.n} intervals, too few for an interval)"
        sure = "" if self.sureness is None else f"; sure at {fmt_level(self.sureness)}"
        interval = f"{fmt_rate_delta(self.low)} to {fmt_rate_delta(self.high)}"
        return f"{shown} ({fmt_level(LEVEL)} {interval}, {self.n} intervals{sure})"


def _decide(mean: float, half: float, margin: float, non_inferiority: bool) -> Verdict | None:
    low, high, bar = mean - half, mean + half, math.log1p(margin)
    if high < 0:
        return "worse"
    if non_inferiority and low > -bar:
        return "not worse"
    if low > 0:
        return "better"
    if -bar < low and high < bar:
        return "no difference"
    return None


def judge(samples: Sequence[float], margin: float, *, non_inferiority: bool = False) -> Judgement:
    """The verdict on the samples so far ("inconclusive" until it is clear; the caller stops at its time
    limit). `non_inferiority`: a promoted replica need only be not worse than the margin."""
    n = len(samples)
    if n == 0:
        return Judgement("inconclusive", 0, None, None, None, None)
    mean = sum(samples) / n
    half = radius(samples, 1.0 - LEVEL)
    verdict = _decide(mean, half, margin, non_inferiority)
    low, high = (None, None) if math.isinf(half) else (math.expm1(mean - half), math.expm1(mean + half))
    if verdict is None:
        return Judgement("inconclusive", n, math.expm1(mean), low, high, None)
    sure = _sureness(samples, mean, margin, verdict, non_inferiority)
    return Judgement(verdict, n, math.expm1(mean), low, high, sure)


def _sureness(samples: Sequence[float], mean: float, margin: float, verdict: Verdict, non_inf: bool) -> float:
    """The largest level (up to 99.9%) at which the interval still gives `verdict` (bisection on log α)."""
    low, high = math.log(1e-3), math.log(1.0 - LEVEL)  # α from 0.001 to 0.05: the verdict holds at 0.05
    if _decide(mean, radius(samples, math.exp(low)), margin, non_inf) == verdict:
        return 1.0 - math.exp(low)
    for _ in range(30):
        middle = (low + high) / 2
        if _decide(mean, radius(samples, math.exp(middle)), margin, non_inf) == verdict:
            high = middle
        else:
            low = middle
    return 1.0 - math.exp(high)
