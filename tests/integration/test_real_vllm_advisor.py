"""The what-if advisor against a sweep of a real vLLM (CPU build, the tiny model with the noisy draft, k=2).

`spectop tune --calibrate` fits the step cost with spectop's own choices (k=0,1,2,3: speculation off
included, since a vLLM file can switch it off; two rounds) at concurrency 1; `spectop snapshot` under
steady traffic (one request after another) gives the advice from the live window; a sweep of the same
server at the same load (k=1,2,3, the file's k=2 as baseline) measures what the advice predicts.

Asserted, per k of the sweep: the prediction's interval (the calibration's own, from the model's
refits), widened by the model's fit error, meets the sweep's 95% interval widened by the restart-to-restart
spread the calibration measured on this host (the sweep's interval resamples the requests of one burst: what
moves a whole burst, a restart's own speed or the host stalling two of its 16 requests threefold, as seen in
a local run, is not in it, and one round of a sweep cannot measure it); for k=1 (a smaller k: its
length is observed in the live window) with the advice's own figure, and for every swept k with the
sweep's own lengths (k=3's live length is extrapolated: that is the length's guess, not the step
cost's). And the advice never advises a k on noise: a k it advises is one the sweep finds significantly
faster than k=2. The figures are printed (tests/bench/README.md quotes them).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_spectop import json_lines, run_spectop
from vllm_managed import ManagedVllm, make_managed
from vllm_models import VllmModels
from vllm_workload import steady_load

from tui.advice.stepcost import StepCostModel, load_models

K = 2  # the file's
MAX_TOKENS = 64  # a burst of a few seconds: a busy host's time slices average out within it
SWEEP_REQUESTS = 16  # as the calibration's own (spectop's default for --calibrate)
WINDOW_S = 20
HEALTH_TIMEOUT_S = 900  # a hung start, not a slow one: vLLM takes 30-90 s on a loaded 2-core machine
RUN_GUARD_S = HEALTH_TIMEOUT_S * 14  # a hang guard over every restart of a run, never a speed bound


@pytest.fixture
def managed(vllm_python: Path, vllm_models: VllmModels, tmp_path: Path) -> Iterator[ManagedVllm]:
    server = make_managed(tmp_path / "bed", vllm_python, vllm_models, k=K)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _tune(server: ManagedVllm, home: Path, *extra: str) -> str:
    done = run_spectop(
        [
            "tune", str(server.config), "--endpoint", server.url,
            "--restart-command", " ".join(server.restart_command), "--concurrency", "1",
            "--max-tokens", str(MAX_TOKENS), "--health-timeout", str(HEALTH_TIMEOUT_S),
            "--log-file", str(server.log_file), "--no-history", *extra,
        ],
        home,
        timeout_s=RUN_GUARD_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stderr


def _kept_model(home: Path) -> StepCostModel:
    path = home / "xdg_data_home" / "spectop" / "stepcost.json"
    (model,) = load_models(path).models
    return model


def _widened(interval: tuple[float, float], error: float) -> tuple[float, float]:
    return interval[0] / (1.0 + error), interval[1] * (1.0 + error)


def _restart_spread(model: StepCostModel) -> float:
    """t x the host's burst-to-burst standard deviation of the log step time, as the calibration measured
    it (each point's spread is exp(t x sd / sqrt(bursts)) - 1)."""
    spreads = [math.log1p(p.spread) * math.sqrt(p.rounds) for p in model.points if p.spread and p.rounds]
    assert spreads, model.points
    return max(spreads)


def _sweep_interval(cells: dict[int, Any], k: int, spread: float) -> tuple[float, float]:
    """The sweep's 95% interval of k over K, widened by the restarts' own spread: k's bursts and K's
    bursts each carry one draw of it per restart."""
    low, high = cells[k]["speedup_ci95"]
    bursts = len(cells[k]["runs"]), len(cells[K]["runs"])
    factor = math.exp(spread * math.sqrt(1 / bursts[0] + 1 / bursts[1]))
    return low / factor, high * factor


def _meets(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def test_the_advice_on_k_matches_a_sweep_of_the_same_vllm(managed: ManagedVllm, tmp_path: Path) -> None:
    original = managed.config.read_bytes()
    calibration_file = tmp_path / "calibration.json"
    said = _tune(managed, tmp_path, "--calibrate", "--json", str(calibration_file))
    assert "k=0,1,2,3 at concurrency 1, 2 rounds" in said, said  # spectop's own choice of values
    assert "step-cost model kept" in said, said
    assert managed.config.read_bytes() == original
    model = _kept_model(tmp_path)
    calibration = json.loads(calibration_file.read_text())
    assert calibration["rounds_run"] == 2 and calibration["baseline_value"] == 0, calibration["stop_reason"]
    assert model.k_range == (0, 3) and [p.k for p in model.points] == [0, 1, 2, 3]
    assert all(p.rounds and p.rounds >= 2 and p.spread is not None for p in model.points), model.points
    assert len(model.replicates) >= 50
    assert calibration["requests"] == 16

    with steady_load([managed.url], concurrency=1, max_tokens=MAX_TOKENS) as loads:
        snapshot = run_spectop(
            ["snapshot", managed.url, "--window", str(WINDOW_S), "--json"], tmp_path, timeout_s=RUN_GUARD_S
        )
    assert snapshot.returncode == 0, snapshot.stderr
    assert loads[0].sent > 0 and not loads[0].errors, loads[0].errors
    advice: dict[str, Any] = json_lines(snapshot.stdout)[0]["advice"]
    assert advice["current_k"] == K and str(advice["basis"]).startswith("tune "), advice

    report = tmp_path / "sweep.json"
    _tune(managed, tmp_path, "--values", "1,2,3", "--requests", str(SWEEP_REQUESTS), "--json", str(report))
    sweep = json.loads(report.read_text())
    assert sweep["baseline_value"] == K
    cells = {o["value"]: o["cells"][0] for o in sweep["outcomes"]}

    error = model.residual  # the model's own fit error; the calibration's uncertainty is in the intervals
    concurrency = advice["load"] if advice["load"] and advice["load"] >= 1 else 1.0
    spread = _restart_spread(model)
    rows = []
    for k in (1, 3):
        measured, ci = cells[k]["speedup"], _sweep_interval(cells, k, spread)
        # the step-cost model with the sweep's own lengths: what the calibration is about
        lengths = cells[k]["mean_acceptance_length"] / cells[K]["mean_acceptance_length"]
        cost = model.step_s(K, concurrency) / model.step_s(k, concurrency)
        ratio = model.speed_ratio_interval(k, K, concurrency)
        assert ratio is not None
        modelled = (ratio[0] * lengths, ratio[1] * lengths)
        live = advice["speedup_by_k"][str(k)], tuple(advice["interval_by_k"][str(k)])
        rows.append((k, live[0], live[1], cost * lengths, modelled, measured, ci))
    print(
        "vLLM advisor vs sweep (k, advice, its interval, model with the sweep's lengths, its interval, "
        "measured, 95% CI with the bursts' spread):", rows, "model", model.cost, "fit error", error,
        "burst spread (t x sd of log step)", spread,
        "sweep's own CIs", {k: cells[k]["speedup_ci95"] for k in (1, 3)},
        "points", [(p.k, round(p.step_s * 1000, 3), p.spread) for p in model.points],
        "advice", advice, "load average", os.getloadavg(),
    )  # fmt: skip
    for k, _, live_interval, _, modelled, _, ci in rows:
        assert _meets(_widened(modelled, error), ci), (k, rows)
        if k < K:  # its length was observed in the live window
            assert _meets(_widened(live_interval, error), ci), (k, rows)
    better = advice["better_k"]
    if better == 0:  # speculation off: the calibration measured k=2 over it (its baseline)
        off = next(o["cells"][0] for o in calibration["outcomes"] if o["value"] == K)
        assert off["speedup_ci95"][1] < 1.0, (better, off, advice)
    elif better is not None:  # never on noise: the sweep must find it faster than the file's k
        assert cells[better]["speedup_ci95"][0] > 1.0, (better, rows, advice)
