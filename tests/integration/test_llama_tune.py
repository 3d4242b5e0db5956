"""`spectop tune` over a real llama-server's draft max, and what stands on it: the advisor, a context axis.

A small launch file (`[draft] max = 4`) is read by a wrapper script, which is the restart command: it
stops the server it started before (pid file) and starts llama-server again with `--spec-draft-n-max`
from the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from llama_server import LlamaServer, free_port, kill_groups
from llama_spectop import json_lines, run_spectop
from llama_workload import traffic_request
from vllm_workload import steady_load

pytestmark = pytest.mark.llamacpp

VALUES = (1, 2, 4)
ORIGINAL = 4
LAUNCH_FILE = f"""# llama-server launch file: the wrapper reads it on every restart
[draft]
max = {ORIGINAL}   # --spec-draft-n-max
"""

WRAPPER = r'''
"""Restart llama-server with the draft max of launch.toml (the tune's restart command): the server it started
before is stopped (SIGTERM, SIGKILL after 10 s) and started again."""
import json, os, subprocess, sys, tomllib
from pathlib import Path

here = Path(__file__).parent
spec = json.loads((here / "command.json").read_text())
sys.path.insert(0, spec["helpers"])
from llama_server import kill_groups

draft_max = tomllib.loads((here / "launch.toml").read_text())["draft"]["max"]
pid_file = here / "server.pid"
if pid_file.exists():
    kill_groups([int(pid_file.read_text())], 10)
argv = [part.replace("{DRAFT_MAX}", str(draft_max)) for part in spec["argv"]]
with open(here / "server.stderr", "ab") as err:
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True,
        env={**os.environ, "LLAMA_TRACE": "1"},
    )
pid_file.write_text(str(process.pid))
print(f"llama-server started as pid {process.pid} with draft max {draft_max}")
'''


@dataclass
class TunedBed:
    """The launch file, the server log, the base URL and the restart command of a wrapped llama-server."""

    launch: Path
    log_file: Path
    url: str
    restart: list[str]

    def tune(self, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        """`spectop tune` of the launch file's draft max through the wrapper; it must succeed."""
        done = run_spectop(
            [
                "tune", str(self.launch), "--endpoint", self.url, "--key", "draft.max", "--restart-command",
                " ".join(self.restart), "--health-timeout", "90", "--log-file", str(self.log_file),
                "--no-history", *extra,
            ],
            home,
            timeout_s=1200,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return done


@pytest.fixture
def bed(new_llama: Callable[[str, str, Path], LlamaServer], tmp_path: Path) -> Iterator[TunedBed]:
    """The wrapped noisy-draft server, started (the tune refuses one that does not answer); stopped after."""
    folder = tmp_path / "bed"
    folder.mkdir()
    server = new_llama("tuned", "noisy", folder)
    server.port = free_port()
    argv = server.command()
    argv[argv.index("--spec-draft-n-max") + 1] = "{DRAFT_MAX}"
    (folder / "command.json").write_text(json.dumps({"argv": argv, "helpers": str(Path(__file__).parent)}))
    (folder / "launch.toml").write_text(LAUNCH_FILE, encoding="utf-8")
    (folder / "wrapper.py").write_text(WRAPPER, encoding="utf-8")
    restart = [sys.executable, str(folder / "wrapper.py")]
    try:
        subprocess.run(restart, check=True, capture_output=True, timeout=60)
        server.wait_healthy()
        yield TunedBed(folder / "launch.toml", server.log_file, server.url, restart)
    finally:
        pid_file = folder / "server.pid"
        if pid_file.exists():
            kill_groups([int(pid_file.read_text())])


def test_tune_sweeps_llama_draft_max_and_reports_acceptance_from_the_server(
    bed: TunedBed, tmp_path: Path
) -> None:
    """The tune restarts through the wrapper for each value and reports acceptance per value from the
    server's own /metrics counters; the file is byte-identical afterwards."""
    original = bed.launch.read_bytes()
    report = tmp_path / "tune.json"
    values = ",".join(map(str, VALUES))
    done = bed.tune(
        tmp_path, "--values", values, "--concurrency", "1,2",
        "--requests", "6", "--max-tokens", "64", "--json", str(report),
    )  # fmt: skip
    result = json.loads(report.read_text(encoding="utf-8"))
    assert result["key"] == "draft.max"
    assert result["baseline_value"] == ORIGINAL  # no 0 in the sweep: the file's own value
    assert bed.launch.read_bytes() == original
    assert httpx.get(bed.url + "/health", timeout=5).status_code == 200
    for outcome in result["outcomes"]:
        assert outcome["started"], outcome["failure"]
        for cell in outcome["cells"]:
            assert cell["errors"] == 0, cell
            assert cell["decode_tokens_per_s"] > 0
            # The server's own counters (llamacpp:spec_decode_*): a noisy draft accepts some, not all.
            assert cell["acceptance_rate"] is not None, cell["acceptance_note"]
            assert 0.0 <= cell["acceptance_rate"] <= 1.0
            assert 1.0 <= cell["mean_acceptance_length"] <= outcome["value"] + 1 + 1e-9
            positions = cell["per_position_acceptance"]
            assert positions is None or len(positions) <= outcome["value"]  # the restart reset them
    assert set(result["best"]) == {"1", "2"} and all(v in VALUES for v in result["best"].values())
    assert "best at concurrency 1: k=" in done.stdout


@pytest.mark.quiet
def test_the_advice_on_draft_max_matches_a_sweep_of_the_same_server(bed: TunedBed, tmp_path: Path) -> None:
    """`tune --calibrate` fits the step cost of the noisy-draft server; `snapshot` under steady traffic gives
    the advice; a three-round sweep (the file's draft max 4 as baseline) measures it: the prediction's
    interval meets the sweep's 95% interval, neither widened (a plain key: 0 is no speculation-off point,
    so the cost of switching speculation on is part of the model's base)."""
    original = bed.launch.read_bytes()
    said = bed.tune(
        tmp_path, "--calibrate", "--values", "1,2,3,4",
        "--concurrency", "1,2", "--requests", "8", "--rounds", "3", "--max-tokens", "64",
    ).stderr  # fmt: skip
    assert "step-cost model kept" in said, said
    assert bed.launch.read_bytes() == original
    with steady_load([bed.url], concurrency=1, send=traffic_request):
        snapshot = run_spectop(["snapshot", bed.url, "--window", "20", "--json"], tmp_path, timeout_s=120)
    assert snapshot.returncode == 0, snapshot.stderr
    advice = json_lines(snapshot.stdout)[0]["advice"]
    assert advice["current_k"] == ORIGINAL and str(advice["basis"]).startswith("tune "), advice
    report = tmp_path / "sweep.json"
    bed.tune(
        tmp_path, "--values", "1,2,4", "--concurrency", "1",
        "--requests", "12", "--rounds", "3", "--max-tokens", "64", "--json", str(report),
    )  # fmt: skip
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


LENGTHS = (256, 768)  # + 32 generated tokens: within a slot's 1024


def test_a_context_axis_on_a_real_llama_server(bed: TunedBed, tmp_path: Path) -> None:
    """Prompts sized by the server's own tokenizer (`POST /tokenize`: the tiny vocabulary spells most filler
    words out in pieces); bursts and the tune take the lengths, the server's counts match them, and the tune
    picks per (load, context) and, its baseline being the file's draft max (llama.cpp's 0 still drafts), says
    that where speculation stops paying cannot be known rather than guess."""
    url = bed.url
    lengths = ",".join(map(str, LENGTHS))
    bench = run_spectop(
        ["bench", "--a", url, "--prompts", "chat", "--prompt-tokens", lengths, "--requests", "4",
         "--rounds", "1", "--max-tokens", "32", "--no-history"],
        tmp_path, timeout_s=600,
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-3000:]
    assert f"lengths by the server's tokenizer ({url}/tokenize)" in bench.stdout
    for tokens in LENGTHS:
        line = next(
            line for line in bench.stdout.splitlines() if line.startswith(f"A: {tokens} tokens asked")
        )
        assert "the server counted" in line and "off, the context is not" not in line, line

    report = tmp_path / "tune.json"
    tune = bed.tune(
        tmp_path, "--values", "1,4", "--concurrency", "1", "--requests", "4",
        "--max-tokens", "32", "--prompts", "chat", "--prompt-tokens", lengths, "--json", str(report),
    )  # fmt: skip
    result = json.loads(report.read_text(encoding="utf-8"))
    assert result["prompt_tokens"] == list(LENGTHS)
    buckets = {(d["concurrency"], d["prompt_tokens"]): d for d in result["context_decisions"]}
    assert set(buckets) == {(1, tokens) for tokens in LENGTHS}
    assert all(d["best"] in (1, 4) for d in buckets.values())
    for outcome in result["outcomes"]:
        assert outcome["started"], outcome["failure"]
        for cell in outcome["cells"]:
            assert (
                abs(cell["prompt_tokens_counted"] - cell["prompt_tokens"]) < 0.25 * cell["prompt_tokens"]
            ), cell
    [stop] = result["context_stops"]
    assert stop["prompt_tokens"] is None and "not speculation off" in stop["reason"]
    assert "speculation stops paying at – (the baseline is not speculation off" in tune.stdout
