"""The what-if advisor against a real llama-server's draft max.

`spectop tune --calibrate --key draft.max` fits the step cost of the noisy-draft server; `spectop snapshot`
under steady traffic (one request after another, concurrency 1) gives the advice from the live window;
a sweep of the same server at the same load over three rounds (restarts; draft max 4, the file's, as
baseline) measures what the advice predicts. The prediction's interval must meet the sweep's 95%
interval, neither widened (a plain key: 0 is no speculation-off point, so the model's cost of switching
speculation on is part of its base).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llama_spectop import json_lines, run_spectop
from llama_workload import traffic_request
from test_llama_tune import ORIGINAL, tuned_server
from vllm_workload import steady_load

pytestmark = pytest.mark.llamacpp
__all__ = ["tuned_server"]  # the fixture, shared with the tune test


def _tune(launch: Path, url: str, restart: list[str], log_file: Path, home: Path, *extra: str) -> str:
    done = run_spectop(
        [
            "tune", str(launch), "--endpoint", url, "--key", "draft.max",
            "--restart-command", " ".join(restart), "--max-tokens", "64", "--health-timeout", "90",
            "--log-file", str(log_file), "--no-history", *extra,
        ],
        home,
        timeout_s=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def test_the_advice_on_draft_max_matches_a_sweep_of_the_same_server(
    tuned_server: tuple[Path, Path, str, list[str]], tmp_path: Path
) -> None:
    launch, log_file, url, restart = tuned_server
    original = launch.read_bytes()
    calibrate = (
        "--calibrate",
        "--values",
        "1,2,3,4",
        "--concurrency",
        "1,2",
        "--requests",
        "8",
        "--rounds",
        "3",
    )
    said = _tune(launch, url, restart, log_file, tmp_path, *calibrate)
    assert "step-cost model kept" in said, said
    assert launch.read_bytes() == original
    with steady_load([url], concurrency=1, send=traffic_request):
        snapshot = run_spectop(["snapshot", url, "--window", "20", "--json"], tmp_path, timeout_s=120)
    assert snapshot.returncode == 0, snapshot.stderr
    advice = json_lines(snapshot.stdout)[0]["advice"]
    assert advice["current_k"] == ORIGINAL and str(advice["basis"]).startswith("tune "), advice
    report = tmp_path / "sweep.json"
    sweep = (
        "--values",
        "1,2,4",
        "--concurrency",
        "1",
        "--requests",
        "12",
        "--rounds",
        "3",
        "--json",
        str(report),
    )
    _tune(launch, url, restart, log_file, tmp_path, *sweep)
    cells = {o["value"]: o["cells"][0] for o in json.loads(report.read_text())["outcomes"]}
    rows = {
        k: (advice["speedup_by_k"].get(str(k)), advice["interval_by_k"].get(str(k)), cells[k]["speedup"],
            cells[k]["speedup_ci95"])
        for k in (1, 2)
    }  # fmt: skip
    print("llama.cpp advisor vs sweep {k: (predicted, its interval, measured, 95% CI over 3 rounds)}:", rows)
    print("advice", advice)
    known = {k: row for k, row in rows.items() if row[0] is not None}
    if not known:  # the whole model unknown (a caveat): said with the reason, and reported as not met here
        assert "unknown" in advice["note"], advice
        pytest.xfail(f"no k predicted on this host: {advice['note']}")
    for _, interval, _, (low, high) in known.values():
        assert interval is not None and interval[1] / interval[0] <= 1.6, rows
        assert interval[0] <= high and low <= interval[1], rows  # they meet, neither widened
    for k in rows.keys() - known.keys():  # unknown, with the reason
        assert f"k={k}" in advice["note"] and "unknown" in advice["note"], advice
