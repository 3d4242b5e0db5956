"""The calibration behind the advisor: the speculation-off point pins the intercept, at least two rounds,
and its own uncertainty (bootstrap refits) raises the advisor's bar, so noisy points advise nothing."""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import statistics
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.tune.conftest import tune_result
from tui.advice.advisor import advise
from tui.advice.calibrate import (
    CALIBRATION_MAX_TOKENS,
    Calibration,
    burst_spread,
    calibration_loads,
    calibration_time_s,
    calibration_values,
    model_from_tune,
    plan_calibration,
    points_from_tune,
    read_calibration,
    replicate_points,
    student_t_quantile,
)
from tui.advice.stepcost import CostPoint, StepCostModel, caveat, fit
from tui.tune.result import CellRun, TuneCell, TuneResult, ValueOutcome
from tui.tune.runner import TuneOptions

BASE_S, PER_SEQ_S, PER_DRAFT_S, PER_DRAFT_SEQ_S = 0.010, 0.002, 0.0019, 0.0004
LENGTH = {0: 1.0, 1: 1.9, 2: 2.6, 3: 2.7}  # the calibration's lengths: a = 0.9, 0.7, 0.1
LIVE = [0.9, 0.7, 0.1]  # the live window's per-position acceptance at k=3: k=2 is 1.14x faster
VLLM = """[model]
name = "m"

[speculative]
enabled = true
method = "draft_model"
model = "d"
num_speculative_tokens = 2
"""


def true_step(k: int, c: float) -> float:
    return BASE_S + PER_SEQ_S * c + k * (PER_DRAFT_S + PER_DRAFT_SEQ_S * c)


# --- the off point ---------------------------------------------------------------------------------------


def test_the_fit_with_the_off_point_recovers_every_term_exactly() -> None:
    points = [
        CostPoint(k=k, concurrency=c, decode_tokens_per_s=LENGTH[k] / true_step(k, c), mean_length=LENGTH[k])
        for k in (0, 1, 2, 3)
        for c in (1, 4)
    ]
    cost, dependent, residual = fit(points)
    assert dependent and residual < 1e-9
    assert cost.base_s == pytest.approx(BASE_S, rel=1e-9)
    assert cost.per_seq_s == pytest.approx(PER_SEQ_S, rel=1e-9)
    assert cost.per_draft_s == pytest.approx(PER_DRAFT_S, rel=1e-9)
    assert cost.per_draft_seq_s == pytest.approx(PER_DRAFT_SEQ_S, rel=1e-9)


VLLM_STEPS_MS = {0: 1.2, 1: 2.4, 2: 3.4, 3: 3.9}  # a real vLLM's steps at k = 0..3


def _points(steps_ms: dict[int, float]) -> list[CostPoint]:
    return [
        CostPoint(k=k, concurrency=1, decode_tokens_per_s=LENGTH[k] / (ms / 1000), mean_length=LENGTH[k])
        for k, ms in steps_ms.items()
    ]


def test_switching_speculation_on_is_a_cost_of_its_own() -> None:
    """Exact on a server that pays 3 ms to switch speculation on and 0.5 ms per draft token; on the real
    vLLM's steps the first draft token costs more than the next ones, where a line through all four cannot."""
    exact = {k: 2.0 + (3.0 + 0.5 * k if k else 0.0) for k in (0, 1, 2, 3)}
    cost, _, residual = fit(_points(exact))
    assert residual < 1e-9
    assert (cost.base_s, cost.on_s, cost.per_draft_s) == pytest.approx((0.002, 0.003, 0.0005), rel=1e-9)
    cost, _, residual = fit(_points(VLLM_STEPS_MS))
    assert cost.on_s > 0.0003 and cost.per_draft_s > 0 and residual < 0.07
    assert cost.step_s(0, 1) == pytest.approx(0.0012, rel=1e-6)  # speculation off: measured, not fitted
    line = cost.model_copy(update={"on_s": 0.0, "base_s": 0.0012, "per_draft_s": 0.0009})
    assert abs(line.step_s(1, 1) / 0.0024 - 1) > abs(cost.step_s(1, 1) / 0.0024 - 1)  # type: ignore[operator]


def test_too_few_points_or_a_wide_residual_make_the_advice_unknown() -> None:
    points = _points({0: 1.2, 1: 2.4})
    cost, dependent, residual = fit(points)
    said = caveat(points, dependent, residual)
    assert said is not None and "k=0 and k=1 only" in said
    assert caveat(_points(VLLM_STEPS_MS), False, 0.05) is None
    bent = _points({0: 1.2, 1: 2.4, 2: 6.0, 3: 3.0})
    cost, dependent, residual = fit(bent)
    said = caveat(bent, dependent, residual)
    assert said is not None and "off at its own points" in said
    model = StepCostModel(
        endpoint="127.0.0.1:8000", key="k", fitted_at=datetime(2026, 12, 1, tzinfo=UTC), cost=cost,
        load_dependent=False, k_range=(0, 3), loads=[1.0], residual=residual, caveat=said, points=bent,
    )  # fmt: skip
    advice = advise(LIVE, 3, 1.0, model)
    assert advice.best_k is None and advice.speedup_by_k == {}
    assert advice.line() == f"k=3 now · step cost unknown: {said}"


def test_a_residual_says_whether_it_is_the_hosts_noise_or_a_wrong_shape() -> None:
    """A busy host (llama.cpp, load 19 on 2 cores): the same k's bursts differ by up to 2x, the fit is 20% off
    at points each known within ±40%: still no prediction, but the reason is the noise, not the model's shape.
    Beyond a point's own spread it is a wrong shape, named at that point."""
    bent = _points({0: 1.2, 1: 2.4, 2: 6.0, 3: 3.0})
    cost, dependent, residual = fit(bent)
    assert residual > 0.15
    plain = caveat(bent, dependent, residual)
    assert plain is not None and plain.endswith("off at its own points (above 15%)")
    noisy = [point.model_copy(update={"spread": 0.9}) for point in bent]
    said = caveat(noisy, dependent, residual, cost)
    assert said is not None and said.startswith(plain) and "within the ±90% the calibration's bursts" in said
    assert "the host's noise, too wide to tell the model's shape" in said
    quiet = [point.model_copy(update={"spread": 0.05}) for point in bent]
    said = caveat(quiet, dependent, residual, cost)
    assert said is not None and said.startswith(plain) and "beyond the ±5% its bursts vary" in said
    unmeasured = caveat(bent, dependent, residual, cost)  # no spread known: where, and no more
    assert unmeasured is not None and " at k=" in unmeasured and "beyond" not in unmeasured


def test_the_calibration_includes_speculation_off_where_the_config_can_switch_it(tmp_path: Path) -> None:
    assert calibration_values(2, zero_is_off=True) == (0, 1, 2, 3)
    assert calibration_values(4, zero_is_off=True) == (0, 2, 4, 5)  # a line above 0: 3 values
    assert calibration_values(4) == (2, 3, 4, 5)  # a plain key: 0 is not off (llama.cpp's draft.max)
    assert calibration_values(1) == calibration_values(None) == (1, 2, 3)
    assert calibration_loads(None) == (1, 4) and calibration_loads(6.4) == (1, 6, 12)
    config = tmp_path / "config.toml"
    config.write_text(VLLM)
    calibration = _read(config, None)
    assert calibration.zero_is_off and calibration.current_k == 2
    launch = tmp_path / "launch.toml"
    launch.write_text("[draft]\nmax = 4\n")
    plain = _read(launch, "draft.max")
    assert not plain.zero_is_off and plain.current_k == 4


def _read(path: Path, key: str | None) -> Calibration:
    return asyncio.run(read_calibration(path, "http://127.0.0.1:8000", key, "m"))


def test_a_calibration_runs_at_least_two_rounds_with_the_off_point(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(VLLM)
    options = TuneOptions(
        config_file=config, endpoint="http://127.0.0.1:1", restart_command=["true"], model="m",
        concurrencies=(1,), rounds=1,
    )  # fmt: skip
    planned, calibration, line = asyncio.run(plan_calibration(options, values_given=False, loads_given=True))
    assert planned.values == (0, 1, 2, 3) and planned.rounds == 2 and calibration.zero_is_off
    assert "k=0,1,2,3 at concurrency 1, 2 rounds" in line
    more = TuneOptions(config_file=config, endpoint="http://127.0.0.1:1", restart_command=["true"], rounds=3)
    again, _, _ = asyncio.run(plan_calibration(more, values_given=True, loads_given=True))
    assert again.rounds == 3 and again.values == more.values  # more rounds and given values are kept


def test_a_calibration_of_a_slow_step_takes_minutes_and_says_so_up_front(tmp_path: Path) -> None:
    """Three values above 0 and short requests: a quarter of the time of five values of long ones."""
    config = tmp_path / "config.toml"
    config.write_text(VLLM.replace("num_speculative_tokens = 2", "num_speculative_tokens = 4"))
    token_s = 0.020 / 2.0  # a 20 ms step emitting two tokens
    given = dict(config_file=config, endpoint="http://127.0.0.1:1", restart_command=["true"], model="m")
    before = TuneOptions(**given, values=(0, 2, 3, 4, 5), concurrencies=(1, 4), rounds=2, requests=16)  # type: ignore[arg-type]
    options = TuneOptions(**given, concurrencies=(1, 4), requests=16, max_tokens=CALIBRATION_MAX_TOKENS)  # type: ignore[arg-type]
    planned, _, line = asyncio.run(plan_calibration(options, values_given=False, loads_given=True))
    assert planned.values == (0, 2, 4, 5) and planned.rounds == 2
    took, was = calibration_time_s(planned, token_s), calibration_time_s(before, token_s)
    assert took is not None and was is not None
    assert took < 240 / 2 and was > 4 * took, (took, was)  # half the budget left for 8 restarts
    assert line.endswith("its time known after the first burst (no live time per token), plus 8 restarts")


# --- the calibration's own uncertainty ---------------------------------------------------------------------


def calibration_result(drift: float, jitter: float, seed: int = 1, requests: int = 8) -> TuneResult:
    """A finished calibration of k=0..3 at concurrency 1, two rounds (the baseline, k=0, three bursts):
    each burst's speed off by up to ±`drift` (the host), each request's by up to ±`jitter`."""
    rng = random.Random(seed)
    order = 0
    outcomes = []
    for k in (0, 1, 2, 3):
        runs = []
        for round_number in (0, 1, 2) if k == 0 else (0, 1):
            burst = rng.uniform(1 - drift, 1 + drift)
            rate = LENGTH[k] / true_step(k, 1) * burst
            samples = [(31.0, 31.0 / (rate * rng.uniform(1 - jitter, 1 + jitter))) for _ in range(requests)]
            length = None if k == 0 else LENGTH[k]
            runs.append(
                CellRun(round=round_number, order=order, samples=samples, mean_acceptance_length=length)
            )
            order += 1
        tokens = sum(a for run in runs for a, _ in run.samples)
        seconds = sum(d for run in runs for _, d in run.samples)
        cell = TuneCell(
            value=k, concurrency=1, ok=True, decode_tokens_per_s=tokens / seconds,
            mean_acceptance_length=None if k == 0 else LENGTH[k], runs=runs,
        )  # fmt: skip
        outcomes.append(ValueOutcome(value=k, started=True, cells=[cell]))
    return tune_result(
        started_at=datetime(2026, 12, 2, 9, 0, tzinfo=UTC), outcomes=outcomes, original_value=3,
        requests=requests, rounds=2, rounds_run=2,
    )  # fmt: skip


def calibrated(drift: float, jitter: float, seed: int = 1) -> StepCostModel:
    calibration = Calibration("127.0.0.1:8000", "m", "s", "speculative.num_speculative_tokens", 3, 0.0, True)
    return model_from_tune(calibration_result(drift, jitter, seed), calibration)


def test_a_quiet_calibration_is_tight_its_advice_says_how_sure_and_the_fit_error_widens_other_ks() -> None:
    model = calibrated(drift=0.005, jitter=0.005)
    assert [(p.k, p.rounds) for p in model.points] == [(0, 3), (1, 2), (2, 2), (3, 2)]
    assert len(model.replicates) == 100
    assert model.spread is not None and model.spread < 0.02
    assert model.cost.per_draft_s == pytest.approx(PER_DRAFT_S + PER_DRAFT_SEQ_S, rel=0.05)
    advice = advise(LIVE, 3, 1.0, model)
    assert advice.better_k == 2 and advice.uncertainty is not None and advice.uncertainty < 0.03
    assert advice.threshold == pytest.approx(0.05 + model.residual + advice.uncertainty)
    low, high = advice.interval_by_k[2]
    assert low <= advice.speedup_by_k[2] <= high  # type: ignore[operator]
    assert advice.line() == f"k=3 now · k=2 would be {advice.speedup_by_k[2]:.2f}x ({low:.2f}-{high:.2f})"
    assert advice.as_json()["interval_by_k"]["2"] == [low, high]
    # the fit error widens each k's interval but the current k's
    exact = advise(LIVE, 3, 1.0, model.model_copy(update={"residual": 0.0}))
    off = advise(LIVE, 3, 1.0, model.model_copy(update={"residual": 0.1}))
    low, high = exact.interval_by_k[2]
    assert off.interval_by_k[2] == pytest.approx((low / 1.1, high * 1.1))
    assert off.interval_by_k[3] == exact.interval_by_k[3]


@pytest.mark.parametrize(("seed", "said"), [(1, "k=2 unknown"), (3, "under the bar"), (5, "fit unknown")])
def test_noisy_points_widen_the_bar_and_advise_nothing_on_noise(seed: int, said: str) -> None:
    """The same server measured on a busy host (each burst ±25%, each request ±10%): the fit may still
    point at k=2 (1.10x in truth), but the calibration cannot tell a 1.10x from its noise."""
    quiet = advise(LIVE, 3, 1.0, calibrated(0.005, 0.005, seed))
    model = calibrated(0.25, 0.10, seed)
    noisy = advise(LIVE, 3, 1.0, model)
    assert (model.caveat is not None) == (said == "fit unknown")
    if model.caveat is not None:  # a fit this far off its own points predicts nothing
        assert noisy.better_k is None and "step cost unknown" in noisy.line()
        return
    assert (noisy.speedup_by_k[2] is None) == (said == "k=2 unknown")
    if noisy.speedup_by_k[2] is None:  # a figure its interval does not pin within ±15% is none
        assert noisy.better_k is None
        assert "unknown: the calibration's interval reaches beyond ±15%" in noisy.note
        return
    assert model.spread is not None and model.spread > 0.1
    assert noisy.uncertainty is not None and quiet.uncertainty is not None
    assert noisy.uncertainty > max(0.03, 10 * quiet.uncertainty), (noisy.uncertainty, quiet.uncertainty)
    assert noisy.threshold == pytest.approx(0.05 + model.residual + noisy.uncertainty)
    assert noisy.threshold > quiet.threshold + 0.1
    assert quiet.better_k == 2 and noisy.better_k is None, noisy
    assert noisy.best_k == 2 and "< bar" in noisy.line(), noisy.line()
    # the calibration's uncertainty on its own, the fit error aside: the bar still widens
    alone = advise(LIVE, 3, 1.0, model.model_copy(update={"residual": 0.0}))
    assert alone.uncertainty is not None and alone.threshold > quiet.threshold
    assert alone.threshold == pytest.approx(0.05 + alone.uncertainty)


def test_noisy_calibrations_of_a_tie_never_advise_another_k() -> None:
    """k=2 and k=3 equally fast in truth: sixty noisy calibrations, no advice."""
    tie = [0.9, 0.7, 0.36]
    assert advise(tie, 3, 1.0, calibrated(0.005, 0.005)).speedup_by_k[2] == pytest.approx(1.0, abs=0.01)
    advised = [seed for seed in range(60) if advise(tie, 3, 1.0, calibrated(0.25, 0.10, seed)).better_k]
    assert advised == []


def test_the_burst_spread_is_the_pooled_spread_of_each_cells_bursts() -> None:
    result = calibration_result(0.0, 0.0)
    slow = result.outcomes[1].cells[0].runs[1]
    slow.samples = [(a, d * 1.2) for a, d in slow.samples]  # k=1's second burst 20% slower
    spread = burst_spread(result)
    assert spread is not None and spread.df == 5  # 9 bursts in 4 cells
    assert spread.sd == pytest.approx(math.sqrt(2 * (math.log(1.2) / 2) ** 2 / 5), rel=1e-6)
    assert student_t_quantile(5) == pytest.approx(2.571, abs=1e-3)
    assert student_t_quantile(1000) == pytest.approx(1.962, abs=1e-3)
    points = points_from_tune(result)
    assert [p.mean_length for p in points] == [LENGTH[k] for k in (0, 1, 2, 3)]
    assert [p.rounds for p in points] == [3, 2, 2, 2]
    replicates = replicate_points(points, spread, resamples=400, seed=3)
    assert all(p.mean_length == LENGTH[p.k] for points in replicates for p in points)  # lengths kept
    sd = statistics.pstdev(math.log(replicate[1].step_s / points[1].step_s) for replicate in replicates)
    assert 0.9 * spread.sd / math.sqrt(2) < sd  # a t draw: at least the normal's spread


def test_a_cell_without_bursts_gives_a_model_without_refits() -> None:
    """An older tune file (no per-burst samples): the model is fitted, its uncertainty unknown (None)."""
    result = calibration_result(0.0, 0.0)
    bare = result.model_copy(deep=True)
    for outcome in bare.outcomes:
        for cell in outcome.cells:
            cell.runs = []
    model = model_from_tune(bare, Calibration("127.0.0.1:8000", "m", "s", "k", 3, 0.0, True))
    assert model.replicates == [] and model.spread is None
    advice = advise(LIVE, 3, 1.0, model)
    assert advice.uncertainty is None and advice.interval_by_k == {}
    assert advice.threshold == pytest.approx(0.05 + model.residual)


# --- a real calibration ------------------------------------------------------------------------------------

REAL = Path(__file__).parent / "data" / "real_vllm_calibration.json"
REAL_LIVE = [0.41598, 0.18257]  # the snapshot's per-position acceptance beside it (k=2, the noisy draft)


def test_a_real_vllm_calibration_on_a_busy_host_advises_nothing() -> None:
    """vLLM's CPU build on a busy host, bursts up to threefold apart: without the calibration's own
    uncertainty the bar advised switching speculation off on noise; with it, k=0 and k=1 are unknown."""
    result = TuneResult.model_validate_json(REAL.read_text())
    cell = result.cell(2, 1)
    assert cell is not None and cell.speedup_ci95 is not None
    assert cell.speedup_ci95[0] < 1 < cell.speedup_ci95[1]
    calibration = Calibration("127.0.0.1:8000", "tiny", None, result.key, 2, 0.0, True)
    model = model_from_tune(result, calibration)
    assert model.cost.per_draft_s == pytest.approx(0.0018, rel=0.05)  # the off point pins the intercept
    advice = advise(REAL_LIVE, 2, 1.0, model)
    assert advice.best_k == 2 and advice.better_k is None, advice
    assert advice.speedup_by_k[0] is None and advice.speedup_by_k[1] is None  # unknown, not a figure
    assert advice.line() == (
        "k=2 now · step cost measured at load 1 only; k=0,1,3,4 unknown: the calibration's interval "
        "reaches beyond ±15% of the figure (calibrate with more rounds)"
    )
    unsure = advise(REAL_LIVE, 2, 1.0, model.model_copy(update={"replicates": []}))
    assert unsure.better_k == 0  # the bar without the calibration's uncertainty: advice on noise


def test_the_sims_step_pays_for_switching_speculation_on_and_its_model_says_so(tmp_path: Path) -> None:
    """The simulator as real servers are: its first draft token costs more than the next ones, and the
    model `spectop demo` gives its dashboard has that cost exactly."""
    from tests.advice.test_advisor_sim import write_config
    from tui.advice.calibrate import sim_step_cost
    from tui.sim.behaviour import Behaviour
    from tui.sim.config import load_sim_config

    config = write_config(tmp_path / "config.toml")  # spec_on_cost_ms = 8
    behaviour = Behaviour.from_config(load_sim_config(config))
    steps = [behaviour.decode_step_s(2, k) for k in range(4)]
    first, second, third = (b - a for a, b in itertools.pairwise(steps))
    assert first > 2 * second > 0 and third == pytest.approx(second)
    model = sim_step_cost(config, "http://127.0.0.1:8000")
    assert model is not None and model.residual < 1e-9 and model.caveat is None
    on = (0.008 / behaviour.speed, 0.0004 / behaviour.speed)  # the sim runs faster than its model
    assert (model.cost.on_s, model.cost.on_seq_s) == pytest.approx(on, rel=1e-6)


def test_the_kept_line_names_the_cost_of_switching_speculation_on(tmp_path: Path) -> None:
    from tui.advice.calibrate import fit_and_keep

    calibration = Calibration("127.0.0.1:8000", "m", "s", "speculative.num_speculative_tokens", 3, 0.0, True)
    _, line = fit_and_keep(calibration_result(0.005, 0.005), calibration, None, tmp_path / "stepcost.json")
    assert line.startswith("step-cost model kept in ") and " + on (" in line, line
