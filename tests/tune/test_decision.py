"""How sure a tune is: drift widens the interval, ties go to the cheapest value, sequential levels."""

from __future__ import annotations

import random

import pytest

from tui.tune.decision import Run, decide, sequential_level, speedups


def _burst(rng: random.Random, rate: float, requests: int = 16, noise: float = 0.03) -> tuple:
    durations = (rng.uniform(0.5, 1.5) for _ in range(requests))  # each drawn just before its noise
    return tuple((rate * duration * rng.gauss(1.0, noise), duration) for duration in durations)


def _sweep(rates: dict[int, float], rounds: int, drift: float = 0.0, seed: int = 1) -> list[Run]:
    """The runner's timeline (baseline first and after every round), drifting by `drift` a burst."""
    rng = random.Random(seed)
    runs, order, others = [], 0, [v for v in rates if v != 0]
    runs.append(Run(0, order, 0, _burst(rng, rates[0])))
    for number in range(rounds):
        for value in others if number % 2 == 0 else list(reversed(others)):
            order += 1
            runs.append(Run(value, order, number, _burst(rng, rates[value] * (1 + drift * order))))
        order += 1
        runs.append(Run(0, order, number + 1, _burst(rng, rates[0] * (1 + drift * order))))
    return runs


def test_drift_between_the_baselines_widens_the_interval_and_it_covers_the_truth() -> None:
    steady = speedups(_sweep({0: 100.0, 2: 150.0}, rounds=1), 0).interval(2, 0.95)
    drifting_runs = _sweep({0: 100.0, 2: 150.0}, rounds=1, drift=-0.15)
    drifting = speedups(drifting_runs, 0).interval(2, 0.95)
    assert steady is not None and drifting is not None
    assert drifting[1] - drifting[0] > 2 * (steady[1] - steady[0])
    # the value ran between a baseline at 100 and one at 70: the truth, 1.5 side by side, is inside
    assert drifting[0] <= 1.5 <= drifting[1] and steady[0] <= 1.5 <= steady[1]


def test_drift_between_two_values_of_one_round_widens_their_comparison() -> None:
    """Two values equal in truth, measured while the host slows, must not read as separated."""
    rng = random.Random(3)
    runs = [
        Run(0, 0, 0, _burst(rng, 100.0)),
        Run(1, 1, 0, _burst(rng, 150.0)),
        Run(2, 2, 0, _burst(rng, 120.0)),  # as fast as 1 in truth, measured 20% slower
        Run(0, 3, 1, _burst(rng, 80.0)),
    ]
    found = speedups(runs, 0)
    between = found.pair_interval(2, 1, 0.95)
    assert between is not None and between[0] <= 1.0 <= between[1]
    decision = decide(found, 1, float, 0.95)
    assert decision.tied == [1, 2] and decision.best == 1 and not decision.significant
    # a steady host keeps them apart: the widening comes from the baseline's spread, not from nowhere
    steady = [Run(0, 0, 0, _burst(rng, 100.0)), *runs[1:3], Run(0, 3, 1, _burst(rng, 100.0))]
    apart = speedups(steady, 0).pair_interval(2, 1, 0.95)
    assert apart is not None and apart[1] < 1.0


@pytest.mark.parametrize(
    ("rates", "rounds", "fastest", "best", "tied", "significant"),
    [
        ({0: 100.0, 1: 166.5, 2: 163.5}, 1, 1, 1, [1, 2], False),  # under 2% apart: the cheaper
        ({0: 100.0, 1: 150.0, 3: 152.0}, 1, 3, 1, [1, 3], False),  # the cheaper, though slower
        ({0: 100.0, 2: 150.0, 3: 120.0}, 2, 2, 2, [2], True),  # well apart: separated
        ({0: 100.0, 2: 101.0}, 1, 2, 0, [0, 2], False),  # nothing beats speculation off significantly
    ],
)
def test_values_within_noise_are_tied_and_the_cheapest_is_recommended(
    rates: dict[int, float], rounds: int, fastest: int, best: int, tied: list[int], significant: bool
) -> None:
    decision = decide(speedups(_sweep(rates, rounds=rounds), 0), 1, float, 0.95)
    assert (decision.fastest, decision.best, decision.tied) == (fastest, best, tied)
    assert decision.significant is significant
    assert decision.beats_baseline is (None if best == 0 else True)


def test_the_bonferroni_level_is_split_over_the_looks() -> None:
    assert sequential_level(1) == 0.95
    assert abs(sequential_level(5) - 0.99) < 1e-12
