"""Is k still right now? Decode speed at every other k, from the window's per-position acceptance
(E[length at k'] = 1 + Σ_{i<k'} a_i, extrapolated above the observed k) and a step-cost model T(k', c)."""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass, field
from typing import Any

from tui.advice.stepcost import StepCostModel
from tui.format import fmt_count, fmt_duration, fmt_rate, fmt_times, fmt_times_interval

DEFAULT_MARGIN = 0.05  # another k must be this much faster (plus the model's error) to be advised
# A speedup whose interval reaches further than this from it (either side) is unknown, not a figure: "1.27x
# (1.07-1.37)" does not say 1.27x (a real vLLM on a busy host then measured 1.10x, its interval 1.00-1.19).
MAX_OFF = 0.15
EXTRAPOLATE = 2  # k' above the current k that are extrapolated
CALIBRATE_HINT = "spectop tune CONFIG --endpoint URL --restart-command CMD --calibrate"
CALIBRATE_KEYS = "T, then c on the tune screen"  # the same calibration from the dashboard


@dataclass(frozen=True)
class Advice:
    """The what-if of one endpoint (or group) now. Speedups are decode tokens/s at k' over k."""

    current_k: int | None
    best_k: int | None = None  # the fastest trusted k (its length observed, its step cost measured)
    speedup_by_k: dict[int, float | None] = field(default_factory=dict)
    length_by_k: dict[int, float] = field(default_factory=dict)
    extrapolated: tuple[int, ...] = ()
    outside_calibration: tuple[int, ...] = ()  # k' (or the load) the step-cost model did not measure
    basis: str | None = None
    note: str = ""
    load: float | None = None
    threshold: float = DEFAULT_MARGIN  # the gain another k needs to be advised
    # each k's speedup interval from the step-cost model's refits (the calibration's uncertainty only)
    interval_by_k: dict[int, tuple[float, float]] = field(default_factory=dict)
    uncertainty: float | None = None  # in the threshold: the compared k's relative interval half-width
    context: str | None = None  # "at this context, k=0: ..." (`context_words`): says more than the k's
    table: str | None = None  # "1-8: k=2, 9-64: k=0" where one k does not fit every load (live.table_offer)

    @property
    def gain(self) -> float | None:
        """The best k's speedup over the current k (1.0 when the current k is best)."""
        return None if self.best_k is None else self.speedup_by_k.get(self.best_k)

    def trusted(self, k: int) -> bool:
        """Its length observed (not extrapolated) and its step cost measured (inside the calibration)."""
        return k not in self.extrapolated and k not in self.outside_calibration

    @property
    def better_k(self) -> int | None:
        """The best (trusted) k when it beats the current one by more than the threshold, else None."""
        gain = self.gain
        if self.best_k is None or self.best_k == self.current_k or gain is None:
            return None
        return self.best_k if gain > 1.0 + self.threshold else None

    @property
    def guess(self) -> tuple[int, float] | None:
        """The fastest k' when a guess (extrapolated or uncalibrated) beats the best trusted k: shown only."""
        known = [(value, -k) for k, value in self.speedup_by_k.items() if value is not None]
        if not known:
            return None
        value, k = max(known)[0], -max(known)[1]
        if self.trusted(k) or value <= (self.gain or 1.0) * (1.0 + self.threshold):
            return None
        return k, value

    def line(self) -> str:
        """ "k=4 now · k=2 would be 1.12x", "k=4 now · best (k=3 0.97x)" (the runner-up among the trusted
        k; a guess only when no other is trusted, marked so), or why it is unknown."""
        if self.context is not None:  # the window's prompts are past where speculation stops paying
            return self.context if self.current_k is None else f"k={self.current_k} now · {self.context}"
        if self.table is not None:  # each range's k beats the others' there by more than the threshold
            head = "advice:" if self.current_k is None else f"k={self.current_k} now ·"
            return f"{head} k by batch size {self.table} (significant)"
        if self.current_k is None:
            return f"advice: {self.note}" if self.note else "advice: –"
        head = f"k={self.current_k} now"
        if self.best_k is None:
            return f"{head} · {self.note}" if self.note else head
        better = self.better_k
        if better is not None:
            interval = self.interval_by_k.get(better)
            sure = "" if interval is None else f" ({fmt_times_interval(interval)})"
            return f"{head} · k={better} would be {fmt_times(self.speedup_by_k.get(better))}{sure}"
        guess = self.guess
        if guess is not None:
            return f"{head} · k={guess[0]} might be ~{fmt_times(guess[1])} (guess)"
        others = [
            (value, k) for k, value in self.speedup_by_k.items() if value is not None and k != self.current_k
        ]
        trusted = [(value, k) for value, k in others if self.trusted(k)]
        if trusted:  # the runner-up shown plain is a measured one, never a guess within the threshold
            value, k = max(trusted)
            if value > 1.0:  # faster by the point estimate, not by the bar: within noise
                return f"{head} · best (k={k} {fmt_times(value)} < bar {fmt_times(1.0 + self.threshold)})"
            return f"{head} · best (k={k} {fmt_times(value)})"
        if others:
            value, k = max(others)
            return f"{head} · best (k={k} ~{fmt_times(value)}, guess)"
        return f"{head} · {self.note}" if self.note else f"{head} · best"  # no other k known: why

    def as_json(self) -> dict[str, Any]:
        return {
            "current_k": self.current_k,
            "best_k": self.best_k,
            "better_k": self.better_k,
            "speedup_by_k": {str(k): v for k, v in sorted(self.speedup_by_k.items())},
            "length_by_k": {str(k): v for k, v in sorted(self.length_by_k.items())},
            "extrapolated": list(self.extrapolated),
            "outside_calibration": list(self.outside_calibration),
            "load": self.load,
            "threshold": self.threshold,
            "interval_by_k": {str(k): list(v) for k, v in sorted(self.interval_by_k.items())},
            "uncertainty": self.uncertainty,
            "basis": self.basis,
            "note": self.note,
            "context": self.context,
        }


def expected_lengths(
    per_position: list[float], current_k: int, extra: int = EXTRAPOLATE
) -> tuple[dict[int, float], tuple[int, ...]]:
    """E[length at k'] for k' = 1 .. current_k + extra, and the k' whose length is extrapolated."""
    rates = [min(1.0, max(0.0, rate)) for rate in per_position[:current_k]]
    if not rates:
        return {}, ()
    ratio = rates[-1] / rates[-2] if len(rates) >= 2 and rates[-2] > 0 else rates[-1]
    ratio = min(1.0, max(0.0, ratio))
    guessed = [*itertools.accumulate([ratio] * extra, operator.mul, initial=rates[-1])][1:]  # geometric
    lengths = dict(enumerate(itertools.accumulate(rates + guessed, initial=1.0)))
    del lengths[0]
    return lengths, tuple(range(len(rates) + 1, len(rates) + extra + 1))


def advise(
    per_position: list[float] | None,
    current_k: int | None,
    load: float | None,
    model: StepCostModel | None,
    *,
    model_note: str | None = None,
    margin: float = DEFAULT_MARGIN,
    extra: int = EXTRAPOLATE,
) -> Advice:
    """The advice from one window's per-position acceptance at the current load."""
    if current_k is None and per_position:
        current_k = len(per_position)
    if current_k == 0:
        return Advice(0, note="speculation is off")
    if not per_position or current_k is None:
        return Advice(current_k, note="no per-position acceptance in the window")
    observed = min(current_k, len(per_position))
    lengths, extrapolated = expected_lengths(per_position, observed, current_k - observed + extra)
    if observed < current_k:  # positions the server did not report: their k' are guesses too
        extrapolated = tuple(k for k in lengths if k > observed)
    lengths[0] = 1.0
    threshold = margin + (model.residual if model is not None else 0.0)
    if model is None or model.caveat is not None:  # no step cost: the lengths alone, and why
        if model is None:
            note = f"{model_note or 'no step-cost model for this server'}: calibrate with {CALIBRATE_HINT} "
            note += f"(or in spectop: {CALIBRATE_KEYS})"
        else:
            note = f"step cost unknown: {model.caveat}"
        return Advice(
            current_k,
            length_by_k=dict(sorted(lengths.items())),
            extrapolated=extrapolated,
            basis=None if model is None else model.basis(),
            note=note,
            load=load,
            threshold=threshold,
        )
    concurrency = load if load is not None and load >= 1 else 1.0
    low, high = model.k_range
    candidates = [k for k in sorted(lengths) if k >= 1 or low == 0]
    outside = [k for k in candidates if not low <= k <= high]
    notes = []
    if observed < current_k:
        notes.append(f"the server reports {observed} positions, the file says k={current_k}")
    if load is None or load <= 0:
        notes.append("idle: figured at concurrency 1")
    elif load < 1:
        notes.append(f"{fmt_count(round(load, 2))} running on average: figured at concurrency 1")
    if model.loads and not (0.5 * min(model.loads) <= concurrency <= 2 * max(model.loads)):
        notes.append(
            f"load {fmt_count(round(concurrency, 1))} far outside the calibrated "
            f"{fmt_count(round(min(model.loads), 1))}-{fmt_count(round(max(model.loads), 1))}"
        )
    if not model.load_dependent:
        notes.append(f"step cost measured at load {fmt_count(round(model.loads[0], 1))} only")
    current_cost = model.step_s(current_k, concurrency)
    current_length = lengths.get(current_k)
    speedups: dict[int, float | None] = {  # a step time is positive or None
        k: (lengths[k] / cost) / (current_length / current_cost)
        if (cost := model.step_s(k, concurrency)) and current_cost and current_length
        else None
        for k in candidates
    }
    intervals = {}
    widen = 1.0 + model.residual  # the fit's own error at its points: a prediction may be that far off
    for k, value in speedups.items():
        ratio = model.speed_ratio_interval(k, current_k, concurrency)
        if value is not None and ratio is not None and current_length is not None:
            scale = lengths[k] / current_length
            stretch = 1.0 if k == current_k else widen  # the current k over itself is exactly 1
            intervals[k] = (ratio[0] * scale / stretch, ratio[1] * scale * stretch)
    wide = [k for k, (a, b) in intervals.items() if k != current_k and not _within(speedups[k], a, b)]
    for k in wide:  # a figure that could be anything within that interval is no figure
        speedups[k] = None
        del intervals[k]
    if wide:
        notes.append(
            f"k={','.join(map(str, wide))} unknown: the calibration's interval reaches beyond "
            f"±{fmt_rate(MAX_OFF)} of the figure (calibrate with more rounds)"
        )
    trusted = [
        (value, -k)
        for k, value in speedups.items()
        if value is not None and k not in outside and k not in extrapolated
    ]
    best = -max(trusted)[1] if trusted else None
    uncertainty = _uncertainty(speedups, intervals, trusted, best, current_k)
    if uncertainty is not None:
        threshold += uncertainty
    return Advice(
        current_k,
        best_k=best,
        speedup_by_k=speedups,
        length_by_k={k: lengths[k] for k in candidates},
        extrapolated=tuple(k for k in extrapolated if k in speedups),
        outside_calibration=tuple(outside),
        basis=model.basis(),
        note="; ".join(notes),
        load=load,
        threshold=threshold,
        interval_by_k=intervals,
        uncertainty=uncertainty,
    )


def _within(point: float | None, low: float, high: float) -> bool:
    return point is not None and low > 0 and point / low <= 1 + MAX_OFF and high / point <= 1 + MAX_OFF


def _uncertainty(
    speedups: dict[int, float | None],
    intervals: dict[int, tuple[float, float]],
    trusted: list[tuple[float, int]],
    best: int | None,
    current_k: int,
) -> float | None:
    """How far (relative) the compared k's speedup may be off by the calibration alone (None: no refits)."""
    others = [(value, -negated) for value, negated in trusted if -negated != current_k]
    compared = best if best is not None and best != current_k else (max(others)[1] if others else None)
    if compared is None:
        return None
    point, interval = speedups.get(compared), intervals.get(compared)
    if point is None or interval is None or not interval[0] > 0:
        return None
    return max(point / interval[0] - 1.0, interval[1] / point - 1.0, 0.0)


@dataclass
class AdviceTracker:
    """Per endpoint: since when another k has been better by more than the threshold."""

    sustained_s: float
    since: dict[str, tuple[int, float]] = field(default_factory=dict)

    def observe(self, name: str, advice: Advice | None, now: float) -> str | None:
        """The alert text while another k has stayed better for `sustained_s`, else None."""
        better = None if advice is None else advice.better_k
        if better is None or advice is None:
            self.since.pop(name, None)
            return None
        if self.since.get(name, (None,))[0] != better:
            self.since[name] = (better, now)
        held_s = self.held_s(name, advice, now)
        return None if held_s is None else alert_text(advice, held_s)

    def held_s(self, name: str, advice: Advice, now: float) -> float | None:
        """How long the advice's better k has held, once that is `sustained_s` or more; else None."""
        held = self.since.get(name)
        if held is None or advice.better_k != held[0] or now - held[1] < self.sustained_s:
            return None
        return now - held[1]


def alert_text(advice: Advice, for_s: float) -> str:
    """ "k=2 would be 1.12x faster than k=4 for 40 s (tune 2026-12-01 21:04; acceptance 88% 61% 30% 20%)"."""
    better = advice.better_k
    gain = None if better is None else advice.speedup_by_k.get(better)
    return (
        f"k={better} would be {fmt_times(gain)} faster than k={advice.current_k} "
        f"for {fmt_duration(for_s)} ({advice.basis or 'no model'})"
    )
