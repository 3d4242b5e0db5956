"""The live what-if advisor's core: the step-cost fit, the advice (exact for k' <= k), extrapolation
flags, persistence of the models, and the sustained alert."""

from __future__ import annotations

import itertools
import json
import operator
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.tune.conftest import tune_result
from tui.advice.advisor import Advice, AdviceTracker, advise, expected_lengths
from tui.advice.calibrate import Calibration, model_from_tune, points_from_tune
from tui.advice.stepcost import (
    CostPoint,
    StepCostError,
    StepCostModel,
    config_facts,
    endpoint_key,
    find_model,
    fit,
    load_models,
    save_model,
)
from tui.configs.document import load_document
from tui.sim.behaviour import Behaviour, draw_accepted, expected_tokens_per_step
from tui.tune.result import TuneCell, ValueOutcome

CONDITIONAL = [0.9, 0.75, 0.3, 0.3, 0.3, 0.3]  # k=2 is best with the step costs below


def behaviour(k: int = 4) -> Behaviour:
    return Behaviour(
        k=k, acceptance=list(CONDITIONAL), content_effect=0.0, step_base_s=0.010, step_per_seq_s=0.002,
        verify_cost_per_draft=0.5, draft_cost_s=0.003, prefill_base_s=0.0, prefill_per_token_s=0.0,
        spec_prefill_overhead=0.0, speed=1.0,
    )  # fmt: skip


def unconditional(conditional: list[float]) -> list[float]:
    """a_i = P(position i accepted) = the product of the conditional probabilities up to i."""
    return list(itertools.accumulate(conditional, operator.mul))


def sim_points(ks: list[int], loads: list[int], conditional: list[float] = CONDITIONAL) -> list[CostPoint]:
    model, lengths = behaviour(), {k: expected_tokens_per_step(conditional[:k]) for k in ks}
    rates = {(k, c): lengths[k] / model.decode_step_s(c, k) for k in ks for c in loads}
    return [
        CostPoint(k=k, concurrency=c, decode_tokens_per_s=rate, mean_length=lengths[k])
        for (k, c), rate in rates.items()
    ]


def fitted(ks: list[int] = [2, 3, 4, 5], loads: list[int] = [1, 4]) -> StepCostModel:  # noqa: B006
    points = sim_points(ks, loads)
    cost, dependent, residual = fit(points)
    return StepCostModel(
        endpoint="127.0.0.1:8000", model="m", settings="s", key="speculative.num_speculative_tokens",
        fitted_at=datetime(2026, 12, 1, 21, 0, tzinfo=UTC), cost=cost, load_dependent=dependent,
        k_range=(min(ks), max(ks)), loads=sorted(loads), residual=residual, points=points,
    )  # fmt: skip


# --- the fit ---------------------------------------------------------------------------------------------


def test_the_fit_recovers_the_simulators_step_cost_exactly() -> None:
    model = fitted()
    truth = behaviour()
    assert model.load_dependent
    assert model.residual < 1e-9
    for k in range(0, 7):
        for c in (1, 2, 4, 8, 16):
            assert model.step_s(k, c) == pytest.approx(truth.decode_step_s(c, k), rel=1e-9)


def test_one_load_fits_the_k_terms_only_and_a_single_k_gives_no_model() -> None:
    cost, dependent, _ = fit(sim_points([2, 3, 4], [4]))
    assert not dependent
    assert cost.step_s(3, 4) == pytest.approx(behaviour().decode_step_s(4, 3))
    with pytest.raises(StepCostError, match="two values of k"):
        fit(sim_points([4], [1, 4]))


def test_noisy_points_give_a_residual() -> None:
    rng = random.Random(1)
    points = [
        point.model_copy(update={"decode_tokens_per_s": point.decode_tokens_per_s * rng.uniform(0.95, 1.05)})
        for point in sim_points([2, 3, 4, 5], [1, 4, 8])
    ]
    _, _, residual = fit(points)
    assert 0.005 < residual < 0.1


def loaded_machine_points() -> list[CostPoint]:
    """A draft cost that does not grow with the batch, measured on a busy machine: the k=5 points at
    the higher load came out fast, which an unconstrained fit reads as a negative per-draft-per-seq cost."""
    steps = {
        (k, c): (0.010 + 0.002 * c + 0.004 * k) * (0.85 if (k, c) == (5, 4) else 1.0)
        for k in (2, 3, 4, 5)
        for c in (1, 4)
    }
    return [
        CostPoint(k=k, concurrency=c, decode_tokens_per_s=2.0 / step, mean_length=2.0)
        for (k, c), step in steps.items()
    ]


def test_every_cost_term_is_fitted_non_negative_at_the_constrained_optimum() -> None:
    from tui.advice.stepcost import _least_squares

    points = loaded_machine_points()
    features = [[1.0, p.concurrency, p.k, p.k * p.concurrency] for p in points]
    targets = [p.step_s for p in points]
    unconstrained = _least_squares(features, targets)
    assert unconstrained is not None and unconstrained[3] < 0  # the data would give a negative term
    cost, dependent, _ = fit(points)
    terms = [cost.base_s, cost.per_seq_s, cost.per_draft_s, cost.per_draft_seq_s]
    assert dependent and min(terms) >= 0 and cost.per_draft_seq_s == 0
    # The optimum of the constrained problem (Karush-Kuhn-Tucker): the gradient of the relative squared
    # error is zero along every positive term and points outward (>= 0) along every term held at 0.
    residuals = [
        (sum(x * c for x, c in zip(row, terms, strict=True)) - t) / t
        for row, t in zip(features, targets, strict=True)
    ]
    for j, term in enumerate(terms):
        gradient = sum(r * row[j] / t for r, row, t in zip(residuals, features, targets, strict=True))
        if term > 0:
            assert gradient == pytest.approx(0.0, abs=1e-9), (j, gradient)
        else:
            assert gradient > 0, (j, gradient)


# --- the advice --------------------------------------------------------------------------------------


def test_expected_length_is_exact_for_smaller_k_against_simulated_steps() -> None:
    """Drafting k'<k keeps min(accepted, k'): the mean of that over simulated steps is 1 + sum a_i."""
    rng = random.Random(3)
    steps = [draw_accepted(rng, CONDITIONAL[:4]) for _ in range(200_000)]
    per_position = [sum(1 for a in steps if a > i) / len(steps) for i in range(4)]  # as /metrics counts
    lengths, extrapolated = expected_lengths(per_position, 4)
    for k in (1, 2, 3, 4):
        measured = 1 + sum(min(a, k) for a in steps) / len(steps)
        assert lengths[k] == pytest.approx(measured, rel=1e-12)
        assert lengths[k] == pytest.approx(expected_tokens_per_step(CONDITIONAL[:k]), rel=0.01)
    assert extrapolated == (5, 6)


def test_advice_finds_the_best_k_with_the_expected_gain() -> None:
    truth = behaviour()
    advice = advise(unconditional(CONDITIONAL[:4]), 4, 1.0, fitted())
    speed = {k: expected_tokens_per_step(CONDITIONAL[:k]) / truth.decode_step_s(1, k) for k in range(1, 5)}
    assert advice.best_k == 2
    assert advice.better_k == 2
    for k in (1, 2, 3, 4):
        assert advice.speedup_by_k[k] == pytest.approx(speed[k] / speed[4], rel=1e-9)
    assert advice.speedup_by_k[4] == pytest.approx(1.0)
    assert advice.extrapolated == (5, 6)
    assert advice.basis is not None and advice.basis.startswith("tune 2026-12-01")
    assert advice.line() == f"k=4 now · k=2 would be {advice.speedup_by_k[2]:.2f}x"
    payload = advice.as_json()
    assert payload["best_k"] == 2 and payload["extrapolated"] == [5, 6]
    assert set(payload["speedup_by_k"]) == {"1", "2", "3", "4", "5", "6"}


def test_high_acceptance_says_keep() -> None:
    high = [0.95, 0.95, 0.95, 0.95]
    advice = advise(unconditional(high), 4, 4.0, fitted())
    assert advice.better_k is None
    assert advice.line().startswith("k=4 now · best")


def test_extrapolated_k_follow_the_observed_decay_and_are_flagged() -> None:
    lengths, extrapolated = expected_lengths([0.8, 0.4], 2, extra=2)
    assert extrapolated == (3, 4)
    assert lengths[3] == pytest.approx(1 + 0.8 + 0.4 + 0.2)
    assert lengths[4] == pytest.approx(1 + 0.8 + 0.4 + 0.2 + 0.1)
    advice = advise([0.8, 0.4], 2, 1.0, fitted())
    assert advice.extrapolated == (3, 4)
    assert 4 in advice.speedup_by_k


def test_without_a_model_the_advice_says_so_and_offers_the_calibration() -> None:
    advice = advise([0.8, 0.5], 2, 3.0, None)
    assert advice.best_k is None and advice.speedup_by_k == {}
    assert "--calibrate" in advice.note
    assert advice.length_by_k[1] == pytest.approx(1.8)
    assert advice.as_json()["basis"] is None


def test_no_positions_speculation_off_or_a_load_outside_the_calibration_is_noted() -> None:
    assert advise(None, 2, 1.0, fitted()).note == "no per-position acceptance in the window"
    assert advise([], 0, 1.0, fitted()).note == "speculation is off"
    assert "far outside the calibrated 1-4" in advise(unconditional(CONDITIONAL[:4]), 4, 30.0, fitted()).note


def test_fewer_positions_than_the_files_k_are_guesses_and_noted() -> None:
    advice = advise([0.8, 0.4], 4, 1.0, fitted())
    assert advice.extrapolated == (3, 4, 5, 6)
    assert "the server reports 2 positions, the file says k=4" in advice.note
    assert advice.better_k is None or advice.better_k <= 2


@pytest.mark.parametrize(
    ("load", "said"), [(0.0, "idle: figured at concurrency 1"), (0.8, "0.8 running on average: figured at")]
)
def test_a_load_below_one_request_is_figured_at_one_and_said_as_it_is(load: float, said: str) -> None:
    assert said in advise(unconditional(CONDITIONAL[:4]), 4, load, fitted()).note


def test_the_models_fit_error_raises_the_bar() -> None:
    model = fitted().model_copy(update={"residual": 0.5})
    advice = advise(unconditional(CONDITIONAL[:4]), 4, 1.0, model)
    assert advice.best_k == 2 and advice.better_k is None  # a 1.28x from a model 50% off is not advised


def test_the_alert_waits_for_sustained_s() -> None:
    tracker = AdviceTracker(sustained_s=30.0)
    better = advise(unconditional(CONDITIONAL[:4]), 4, 1.0, fitted())
    assert tracker.observe("a", better, 100.0) is None
    assert tracker.observe("a", better, 120.0) is None
    text = tracker.observe("a", better, 131.0)
    assert text is not None and text.startswith("k=2 would be") and "than k=4" in text
    keep = advise(unconditional([0.95] * 4), 4, 1.0, fitted())
    assert tracker.observe("a", keep, 132.0) is None
    assert tracker.observe("a", better, 133.0) is None  # starts over


# --- calibration and persistence ----------------------------------------------------------------------


def test_a_tune_result_becomes_a_model() -> None:
    points = sim_points([0, 2, 4], [1, 4])
    outcomes = []
    for k in (0, 2, 4):
        cells = [
            TuneCell(
                value=k, concurrency=p.concurrency, ok=True, decode_tokens_per_s=p.decode_tokens_per_s,
                mean_acceptance_length=None if k == 0 else p.mean_length,
            )
            for p in points
            if p.k == k
        ]  # fmt: skip
        outcomes.append(ValueOutcome(value=k, started=True, cells=cells))
    outcomes.append(ValueOutcome(value=6, started=False, failure="OOM"))
    result = tune_result(outcomes=outcomes, original_value=4, max_tokens=64)
    assert len(points_from_tune(result)) == 6
    model = model_from_tune(result, Calibration("127.0.0.1:8000", "m", "s", "k", 4), "tune.json")
    assert model.k_range == (0, 4) and model.loads == [1, 4] and model.residual < 1e-9
    assert advise(unconditional(CONDITIONAL[:4]), 4, 1.0, model).speedup_by_k[0] is not None


def test_value_0_of_a_plain_key_is_no_speculation_off_point() -> None:
    """llama.cpp's draft.max = 0 with a draft model still drafts (length 1.76 on a real llama-server):
    the fit must not take it for k=0 at length 1."""
    cells = {
        k: [TuneCell(value=k, concurrency=1, ok=True, decode_tokens_per_s=v, mean_acceptance_length=length)]
        for k, v, length in ((0, 650.0, 1.76), (1, 690.0, 1.76), (2, 800.0, 2.34))
    }
    outcomes = [ValueOutcome(value=k, started=True, cells=c) for k, c in cells.items()]
    result = tune_result(outcomes=outcomes, kind="toml", key="draft.max", original_value=2, zero_is_off=False)
    assert [p.k for p in points_from_tune(result)] == [1, 2]
    vllm = result.model_copy(update={"zero_is_off": True})
    assert [(p.k, p.mean_length) for p in points_from_tune(vllm)] == [(0, 1.0), (1, 1.76), (2, 2.34)]


def test_models_persist_keyed_by_endpoint_model_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "spectop" / "stepcost.json"
    assert load_models(path).models == []
    first = fitted()
    save_model(first, path)
    newer = first.model_copy(update={"fitted_at": datetime(2026, 12, 2, tzinfo=UTC)})
    other = first.model_copy(update={"settings": "other"})
    save_model(newer, path)
    save_model(other, path)
    kept = load_models(path)
    assert len(kept.models) == 2  # the same key was replaced
    json.loads(path.read_text())  # plain JSON
    found, note = find_model(kept, "http://localhost:8000/", "m", "s")
    assert found == newer and note is None
    found, note = find_model(kept, "http://127.0.0.1:8000", "m", "third")
    assert found is None and note is not None and "other settings" in note
    assert find_model(kept, "http://127.0.0.1:9999", "m", None) == (None, None)
    assert find_model(kept, "127.0.0.1:8000", "another-model", None) == (None, None)


def test_a_broken_file_is_reported_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "stepcost.json"
    path.write_text('{"format": "spectop-stepcost/1", "models": [{"endpoint": 3}]}')
    with pytest.raises(StepCostError, match=r"stepcost.json: models\.0"):
        load_models(path)
    with pytest.raises(StepCostError):
        save_model(fitted(), path)
    assert "endpoint" in path.read_text()


def test_endpoint_keys_and_settings_digest() -> None:
    assert endpoint_key("http://LOCALHOST:8000/metrics") == "127.0.0.1:8000"
    assert endpoint_key("gpu1:9000") == "gpu1:9000"
    # a label that is no URL is its own key
    assert endpoint_key("10.1.0.1\x1b[31m:80x") == "10.1.0.1\x1b[31m:80x"
    text = '[model]\nname = "x"\n[speculative]\nenabled = true\nmethod = "mtp"\nnum_speculative_tokens = 4\n'
    k4, digest4, key = config_facts(load_document(text, "vllm_toml"))
    k2, digest2, _ = config_facts(load_document(text.replace("= 4", "= 2"), "vllm_toml"))
    _, other, _ = config_facts(load_document(text.replace('"x"', '"y"'), "vllm_toml"))
    assert (k4, k2, key) == (4, 2, "speculative.num_speculative_tokens")
    assert digest4 == digest2 != other


def test_a_faster_guess_is_shown_but_never_best_or_advised() -> None:
    high = unconditional([0.95, 0.95, 0.95, 0.95])
    advice = advise(high[:2], 2, 1.0, fitted())  # k=2 now: k=3, 4 only extrapolated
    assert advice.best_k == 2 and advice.better_k is None  # k=1 is outside the calibration (2-5) too
    assert advice.guess is not None and advice.guess[0] in (3, 4)
    assert "might be ~" in advice.line() and advice.line().endswith("(guess)")


def test_the_runner_up_is_shown_plain_when_trusted_and_marked_a_guess_when_only_guesses_are_left() -> None:
    """As on the real vLLM: an extrapolated k a little faster than the current one (within
    the threshold: no guess shown) was the runner-up "best (k=5 1.03x)", shown as if measured."""
    advice = advise(unconditional([0.9, 0.8, 0.95]), 3, 1.0, fitted())  # k=4, 5 extrapolated
    assert advice.best_k == 3 and advice.guess is None
    assert advice.speedup_by_k[5] > advice.speedup_by_k[4] > 1.0 > advice.speedup_by_k[2]
    assert advice.line() == f"k=3 now · best (k=2 {advice.speedup_by_k[2]:.2f}x)"
    # with only guesses beside the current k, the runner-up is marked a guess
    advice = Advice(2, best_k=2, speedup_by_k={2: 1.0, 3: 1.02}, extrapolated=(3,))
    assert advice.guess is None  # within the threshold
    assert advice.line() == "k=2 now · best (k=3 ~1.02x, guess)"
