"""The what-if advisor against a sweep of a real vLLM (CPU build, noisy draft, k=2): `tune --calibrate`
with spectop's own choices, `snapshot` under steady traffic for the advice, a three-round sweep at the same
load to measure it; asserted unwidened (the figures are printed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from llama_spectop import json_lines, run_spectop
from vllm_server import ManagedVllm
from vllm_workload import MODEL, steady_load

from tui.advice.stepcost import load_models
from tui.bench.prompts import load_prompt_set

K = 2  # the file's
MAX_TOKENS = 64  # a burst of a few seconds: a busy host's time slices average out within it
SWEEP_REQUESTS = 16  # as the calibration's own (spectop's default for --calibrate)
WINDOW_S = 20
HEALTH_TIMEOUT_S = 900  # a hung start, not a slow one: vLLM takes 30-90 s on a loaded 2-core machine
RUN_GUARD_S = HEALTH_TIMEOUT_S * 14  # a hang guard over every restart of a run, never a speed bound


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


def sweep_request(url: str, index: int) -> None:
    """A chat request with the sweep's own prompts (built-in), in turn."""
    prompts = load_prompt_set("mixed").prompts
    messages = prompts[index % len(prompts)].chat_messages()
    body = {"model": MODEL, "messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0}
    httpx.post(url + "/v1/chat/completions", json=body, timeout=600).raise_for_status()


@pytest.mark.quiet
def test_the_advice_on_k_matches_a_sweep_of_the_same_vllm(managed: ManagedVllm, tmp_path: Path) -> None:
    original = managed.config.read_bytes()
    calibration_file = tmp_path / "calibration.json"
    said = _tune(managed, tmp_path, "--calibrate", "--rounds", "3", "--json", str(calibration_file))
    assert "k=0,1,2,3 at concurrency 1, 3 rounds" in said, said  # spectop's own choice of values
    assert "step-cost model kept" in said, said
    assert managed.config.read_bytes() == original
    (model,) = load_models(tmp_path / "xdg_data_home" / "spectop" / "stepcost.json").models
    calibration = json.loads(calibration_file.read_text())
    assert calibration["rounds_run"] == 3 and calibration["baseline_value"] == 0, calibration["stop_reason"]
    assert model.k_range == (0, 3) and [p.k for p in model.points] == [0, 1, 2, 3]
    assert len(model.replicates) >= 50

    with steady_load([managed.url], concurrency=1, send=sweep_request) as (load,):
        snapshot = run_spectop(
            ["snapshot", managed.url, "--window", str(WINDOW_S), "--json"], tmp_path, timeout_s=RUN_GUARD_S
        )
    assert snapshot.returncode == 0, snapshot.stderr
    assert load.sent > 0
    advice: dict[str, Any] = json_lines(snapshot.stdout)[0]["advice"]
    assert advice["current_k"] == K and str(advice["basis"]).startswith("tune "), advice
    print(
        "vLLM advice", advice, "model", model.cost, "fit error", model.residual, "caveat", model.caveat,
        "points", [(p.k, round(p.step_s * 1000, 3), p.spread) for p in model.points],
        "load average", os.getloadavg(),
    )  # fmt: skip
    if advice["speedup_by_k"].get("1") is None:
        # The requirement (a number for k=1 on this vLLM) is not met on this run: the run says so and why
        # instead of passing, before the sweep's nine restarts (it would only measure a figure not given).
        assert "unknown" in json.dumps(advice), advice
        pytest.xfail(f"k=1 unknown ({advice['note']})")

    report = tmp_path / "sweep.json"
    for attempt in (1, 2):
        _tune(
            managed, tmp_path, "--values", "1,2,3", "--requests", str(SWEEP_REQUESTS), "--rounds", "3",
            "--json", str(report),
        )  # fmt: skip
        sweep = json.loads(report.read_text())
        # A vLLM that dies while starting (seen beside another vLLM test on two cores: EngineDeadError) leaves
        # its value unmeasured; tune reports it, and the sweep runs once more.
        unmeasured = {o["value"]: o["failure"] for o in sweep["outcomes"] if not o["cells"]}
        if not unmeasured:
            break
        print(f"sweep {attempt}: values not measured: {unmeasured}")
    assert not unmeasured, f"the sweep could not measure {unmeasured}"
    assert sweep["baseline_value"] == K and sweep["rounds_run"] == 3
    cells = {o["value"]: o["cells"][0] for o in sweep["outcomes"]}
    rows = {
        k: (advice["speedup_by_k"].get(str(k)), advice["interval_by_k"].get(str(k)), cells[k]["speedup"],
            cells[k]["speedup_ci95"])
        for k in (1, 3)
    }  # fmt: skip
    print("vLLM advisor vs sweep {k: (predicted, its interval, measured, 95% CI over 3 rounds)}:", rows)
    predicted, interval, measured, ci = rows[1]
    assert interval is not None, advice
    assert abs(predicted / measured - 1.0) <= 0.15, rows
    assert interval[1] / interval[0] <= 1.6, rows
    assert interval[0] <= ci[1] and ci[0] <= interval[1], rows  # they meet
    better = advice["better_k"]
    if better == 0:  # speculation off: the calibration measured k=2 over it (its baseline)
        off = next(o["cells"][0] for o in calibration["outcomes"] if o["value"] == K)
        assert off["speedup_ci95"][1] < 1.0, (better, off, advice)
    elif better is not None:  # never on noise: the sweep must find it faster than the file's k
        assert cells[better]["speedup_ci95"][0] > 1.0, (better, rows, advice)
