"""`spectop tune` over `num_speculative_tokens` on a real vLLM whose restart script returns before the old
server is gone (vllm_server.py); a tap shows which k answered each burst (the restart race).
"""

from __future__ import annotations

import difflib
import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from llama_spectop import run_spectop, spectop_running
from vllm_models import VllmModels
from vllm_server import ManagedVllm, make_managed
from vllm_workload import RecordingTap, served_k

REQUESTS = 3
MAX_TOKENS = 24
HEALTH_TIMEOUT_S = 900  # a hung start, not a slow one: vLLM takes 30-90 s on a loaded 2-core machine


def _tune_args(server: ManagedVllm, tap: RecordingTap, values: str, report: Path) -> list[str]:
    return [
        "tune", str(server.config), "--endpoint", tap.url,
        "--restart-command", " ".join(server.restart_command), "--values", values, "--concurrency", "1",
        "--requests", str(REQUESTS), "--warmup", "0",
        "--max-tokens", str(MAX_TOKENS), "--health-timeout", str(HEALTH_TIMEOUT_S),
        "--log-file", str(server.log_file), "--no-history", "--json", str(report),
    ]  # fmt: skip


def _bursts(tap: RecordingTap) -> list[tuple[int, dict[str, Any] | None]]:
    """Per streamed answer, in order: the k its server ran and its speculative figures."""
    out = []
    for _, chunks in tap.streams():
        metrics = [chunk["metrics"] for chunk in chunks if chunk.get("metrics")]
        spec = metrics[-1].get("speculative_decoding") if metrics else None
        out.append((spec["num_spec_tokens"] if spec else 0, spec))
    return out


def _served_k_or_none(url: str) -> int | None:
    """The k the server runs, None while it does not answer (starting)."""
    try:
        return served_k(url)
    except httpx.HTTPError:
        return None


def test_tune_sweeps_k_on_real_vllm_and_applies_the_best_as_one_line(
    managed: ManagedVllm, tmp_path: Path
) -> None:
    original = managed.config.read_text()
    report = tmp_path / "tune.json"
    with RecordingTap(managed.url) as tap:
        args = [*_tune_args(managed, tap, "0,1,2,3", report), "--apply"]
        done = run_spectop(args, tmp_path, timeout_s=HEALTH_TIMEOUT_S * 8)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(report.read_text())
    assert [outcome["value"] for outcome in result["outcomes"]] == [0, 1, 2, 3]
    failures = {o["value"]: o["failure"] for o in result["outcomes"] if not o["started"]}
    assert not failures, (failures, done.stderr[-3000:])
    bursts = _bursts(tap)
    # Each value's burst was answered by a server running that k, never the old process; the baseline
    # (the first value) is measured again after the others: the round's closing bracket.
    sweep = [0, 1, 2, 3, 0]
    assert [k for k, _ in bursts] == [value for value in sweep for _ in range(REQUESTS)], bursts
    for index, outcome in enumerate(result["outcomes"]):
        assert outcome["started"], outcome["failure"]
        (cell,) = outcome["cells"]
        assert cell["errors"] == 0
        answers = [spec for _, spec in bursts[index * REQUESTS : (index + 1) * REQUESTS]]
        if outcome["value"] == 0:
            assert cell["acceptance_rate"] is None
            continue
        accepted = sum(spec["num_accepted_draft_tokens"] for spec in answers if spec)
        drafted = sum(spec["num_draft_tokens"] for spec in answers if spec)
        assert cell["acceptance_rate"] == pytest.approx(accepted / drafted, rel=1e-9), cell
    best = result["best"]["1"]
    # --apply writes only a value significantly faster than the file's own (k=2), as one line; otherwise
    # the file is kept and says why. The server runs on the file either way.
    applied = result["applied"]
    final = applied["value"] if applied else 2
    assert result["apply_note"], result
    diff = difflib.unified_diff(original.splitlines(), managed.config.read_text().splitlines(), lineterm="")
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    if final == 2:
        assert changed == []
    else:
        expected = (
            "-enabled = true" if final == 0 else "-num_speculative_tokens = 2   # draft tokens per step"
        )
        assert len(changed) == 2 and changed[0] == expected, changed
    assert served_k(managed.url) == final
    assert managed.restarts() == [2, *sweep, final]
    assert f"best at concurrency 1: k={best}" in done.stdout or "best" in done.stdout


def test_tune_restores_the_file_after_a_failed_value_and_sigint(
    vllm_python: Path, vllm_models: VllmModels, tmp_path: Path
) -> None:
    """Speculation off in the file, with a draft model path that does not exist: value 0 runs, value 2
    cannot start (the reason is vLLM's own error), and SIGINT during value 3 restores the file."""
    server = make_managed(
        tmp_path / "bed", vllm_python, vllm_models, k=1, enabled=False, draft=tmp_path / "no-such-draft"
    )
    original = server.config.read_bytes()
    report = tmp_path / "tune.json"
    try:
        server.start()
        with (
            RecordingTap(server.url) as tap,
            spectop_running(_tune_args(server, tap, "0,2,3", report), tmp_path) as process,
        ):
            while 3 not in server.restarts():  # the restart for value 3 has begun
                assert process.poll() is None, process.communicate()
                time.sleep(0.5)
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=HEALTH_TIMEOUT_S * 3)
        assert server.config.read_bytes() == original
        result = json.loads(report.read_text())
        assert result["cancelled"], stderr[-2000:]
        outcomes = {outcome["value"]: outcome for outcome in result["outcomes"]}
        assert outcomes[0]["started"]
        assert not outcomes[2]["started"]
        failure = outcomes[2]["failure"]
        assert "no-such-draft" in failure, failure  # from vLLM's log, not a bare timeout
        # SIGINT ends the tune without waiting for /health (it says so); the server comes back on the
        # restored file (speculation off) by itself.
        assert "spectop did not wait for /health" in stderr, stderr[-2000:]
        deadline = time.monotonic() + HEALTH_TIMEOUT_S  # a hang guard
        while _served_k_or_none(server.url) != 0:
            assert time.monotonic() < deadline, server.tail()
            time.sleep(1.0)
        assert server.restarts()[-1] == 0
        assert httpx.get(server.url + "/health", timeout=30).status_code == 200
        assert stdout or stderr
    finally:
        server.stop()
