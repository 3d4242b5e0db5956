"""The autopilot's limits and its pure decisions (no I/O, no clock: the caller passes the time).
The sequential test (`judge`): is the changed server faster, on per-interval samples of log(changed /
reference)? An always-valid 95% confidence sequence on the samples' mean (the asymptotic CS of Waudby-Smith
et al., "Time-uniform central limit theory", 2021): it may be looked at after every interval and stopped as
soon as it is clear, without inflating the error. `sureness` is the largest level at which the verdict
still holds: how sure the test is."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tui.configs.spec_table import table_text
from tui.format import fmt_duration, fmt_level, fmt_rate, fmt_rate_delta

HOUR_S = 3600.0
ERRORS_SURE = 0.999  # an error-rate rise is acted on when this sure (one-sided two-proportion z-test)
ERRORS_SURE_Z = 3.09
ERRORS_MIN_RISE = 0.01  # and the share of failed answers rose by at least this much
MIN_ANSWERS = 20  # on each side: fewer answers say too little

Table = list[list[int]]  # vLLM's num_speculative_tokens_per_batch_size: [[lo, hi, k], ...]
Proposal = int | Table  # a k for every load, or a k by batch size


def proposal_words(proposal: Proposal | None) -> str:
    """ "k=2", or a table as the guard says it: "batch 1: k=3, 2-256: k=1"."""
    if isinstance(proposal, list):
        return table_text([(lo, hi, k) for lo, hi, k in proposal])
    return f"k={proposal}"


@dataclass(frozen=True)
class Limits:
    margin: float = 0.05  # a change must pay this much to count as better
    sustained_s: float = 120.0  # the advice must hold this long
    max_changes_per_hour: int = 6
    min_healthy: int = 1  # replicas that must stay up beside the one being changed
    quiet_s: float = 60.0  # after a change: no other, and the test's samples start after it
    interval_s: float = 15.0  # one sample per instance per interval
    test_limit_s: float = 900.0  # a test still unclear then is inconclusive
    max_load_shift: float = 0.3  # one server: before and after must be within this of each other's load


def gate(limits: Limits, changes: list[float], now: float, healthy: int, total: int) -> str | None:
    """Why no change may start now (None: it may). `changes`: when each earlier change was made."""
    recent = [at for at in changes if now - at < HOUR_S]
    if len(recent) >= limits.max_changes_per_hour:
        left = HOUR_S - (now - min(recent))
        limit = limits.max_changes_per_hour
        return f"{len(recent)} changes in the last hour (limit {limit}): {fmt_duration(left)} to wait"
    if changes and now - changes[-1] < limits.quiet_s:
        return (
            f"quiet period after the last change: {fmt_duration(limits.quiet_s - (now - changes[-1]))} left"
        )
    if total > 1 and healthy - 1 < limits.min_healthy:
        fewer = limits.min_healthy
        return f"{healthy} of {total} replicas healthy: taking one out would leave fewer than {fewer}"
    if healthy < total:
        return f"only {healthy} of {total} replicas healthy"
    return None


def errors_rose(mine: tuple[float, float], reference: tuple[float, float]) -> str | None:
    """Why the changed server's failed share is surely above the reference's; each is (failed, answered)."""
    (failed, answered), (ref_failed, ref_answered) = mine, reference
    if answered < MIN_ANSWERS or ref_answered < MIN_ANSWERS:
        return None
    share, ref_share = failed / answered, ref_failed / ref_answered
    pooled = (failed + ref_failed) / (answered + ref_answered)
    spread = math.sqrt(pooled * (1.0 - pooled) * (1.0 / answered + 1.0 / ref_answered))
    if share - ref_share < ERRORS_MIN_RISE or spread <= 0 or (share - ref_share) / spread < ERRORS_SURE_Z:
        return None
    shares = f"{fmt_rate(share)} of answers failed, {fmt_rate(ref_share)} on the reference"
    return f"errors rose: {shares} (sure at {fmt_level(ERRORS_SURE)})"


@dataclass
class Sustained:
    """Since when the advisor has proposed the same (by value) better k or table."""

    sustained_s: float
    proposal: Proposal | None = None
    since: float = 0.0

    def observe(self, proposal: Proposal | None, now: float) -> float | None:
        """How long `proposal` has been advised (None: nothing better)."""
        if proposal is None:
            self.proposal = None
            return None
        if proposal != self.proposal:
            self.proposal, self.since = proposal, now
        return now - self.since

    def held(self, now: float) -> bool:
        return self.proposal is not None and now - self.since >= self.sustained_s


@dataclass
class PilotState:
    """What the autopilot is doing with one instance, in words a card or a row can show."""

    instance: str
    k: int | None = None
    words: str = "watching"  # now: "canary k=2, 3 min, +8% so far (not yet significant)"
    last: str = ""  # the last decision: "kept k=2: better +11% (…)"

    def line(self) -> str:
        """Its words, and the last decision: first while it only watches (a card cuts the end off)."""
        if self.last and self.words.startswith("watching"):
            return f"autopilot: last: {self.last} · {self.words}"
        return f"autopilot: {self.words}" + (f" · last: {self.last}" if self.last else "")


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
