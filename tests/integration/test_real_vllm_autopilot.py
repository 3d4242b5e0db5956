"""One full cycle of `spectop autopilot --auto` on two real vLLMs
(CPU build) scraped by a real Prometheus, with the same steady load on both.

Each replica runs from its own `config.toml` through the restart script of the other real-vLLM tests
(`vllm_server.py`), in a folder named by its port, so the fleet's templates name its file and its restart.
The step-cost model is seeded (a calibration of a real vLLM is `test_real_vllm_advisor.py`'s proof, and
it takes a quarter of an hour on this host): a draft token costs what the target's step does (draft and
target are the same tiny architecture), so on the noisy draft's acceptance the advisor names a smaller k.
The autopilot then changes one canary, restarts it, compares it with the unchanged replica interval by
interval with its sequential test, and keeps and promotes the change or writes the exact bytes back.
Whatever the verdict on this noisy host, the cycle completes: every file ends at its verified new k (and
the server answers with it) or byte for byte as it started, and the audit trail and `--history` say so.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from llama_spectop import run_spectop, spectop_running
from vllm_models import VllmModels
from vllm_server import START_TIMEOUT_S, ManagedVllm, make_managed
from vllm_workload import served_k, steady_load

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.fleet.conftest import prometheus_binary, start_prometheus, wait_targets_up, write_config
from tui.advice.guard import file_k
from tui.advice.stepcost import CostPoint, StepCostModel, endpoint_key, fit, save_model
from tui.autopilot import audit
from tui.autopilot.audit import AuditRecord
from tui.configs.editing import open_config, unified_diff

START_K = 3
SCRAPE_S = 2  # a vLLM's /metrics may take a second to answer on this loaded host: a 1 s scrape would miss
# The limits: a sample every 6 s (Prometheus' rate over the interval: 3 scrapes), the advice held 12 s, 15 s
# of quiet after a restart, and a test inconclusive after 150 s (25 samples at most; it needs 8 at least).
LIMITS = ["--interval", "6", "--sustained", "12", "--quiet", "15", "--test-limit", "150"]
HANG_GUARD_S = 6 * START_TIMEOUT_S  # a hung cycle (three restarts, two tests at most), never a speed bound
END_OF_CYCLE = ("promoted", "rolled_back")  # two replicas: the canary rolled back, or the other promoted


def replica(tmp_path: Path, python: Path, models: VllmModels) -> ManagedVllm:
    """A managed vLLM at k=3 (noisy draft) whose folder is named by its port: vllm-PORT/config.toml."""
    made = make_managed(tmp_path / f"new-{len(list(tmp_path.glob('*')))}", python, models, k=START_K)
    folder = tmp_path / f"vllm-{made.port}"
    made.folder.rename(folder)
    return ManagedVllm(folder, made.port)


def seed_step_cost(home: Path, instances: list[str]) -> None:
    """A step-cost model per replica where each draft token costs one target step: T(k) = (1 + k)·20 ms,
    measured (as it were) at k = 1, 2, 3 and load 1; exact, so its residual is 0."""
    points = [
        CostPoint(k=k, concurrency=1, decode_tokens_per_s=1.0 / ((1 + k) * 0.02), mean_length=1.0)
        for k in (1, 2, 3)
    ]
    cost, dependent, residual = fit(points)
    for instance in instances:
        model = StepCostModel(
            endpoint=endpoint_key(instance), key="speculative.num_speculative_tokens",
            fitted_at=datetime.now(UTC), cost=cost, load_dependent=dependent, k_range=(1, 3), loads=[1.0],
            residual=residual, points=points,
        )  # fmt: skip
        save_model(model, home / "xdg_data_home" / "spectop" / "stepcost.json")


class Output:
    """A process's output, read line by line in the background (printed as it comes: the run is long)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.threads = [
            threading.Thread(target=self._read, args=(stream,), daemon=True)
            for stream in (process.stdout, process.stderr)
        ]
        for thread in self.threads:
            thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append(line.rstrip())
            print(f"  | {line.rstrip()}", flush=True)

    def join(self) -> str:
        for thread in self.threads:
            thread.join(timeout=60)
        return "\n".join(self.lines)


def records_of(trail: Path) -> list[AuditRecord]:
    return audit.read(trail)[0] if trail.exists() else []


@pytest.mark.skipif(prometheus_binary() is None, reason="needs the prometheus binary (Debian package)")
def test_one_full_autopilot_cycle_on_two_real_vllms(
    vllm_python: Path, vllm_models: VllmModels, tmp_path: Path
) -> None:
    began = time.monotonic()
    beds = tmp_path / "beds"
    beds.mkdir()
    replicas = [replica(beds, vllm_python, vllm_models) for _ in range(2)]
    by_instance = {f"127.0.0.1:{server.port}": server for server in replicas}
    found = {instance: server.config.read_bytes() for instance, server in by_instance.items()}
    trail, home = tmp_path / "autopilot.jsonl", tmp_path / "home"
    prometheus = None
    try:
        with ThreadPoolExecutor(2) as starting:  # both at once: 30-90 s each on this host
            list(starting.map(lambda server: server.start(), replicas))
        config = write_config(tmp_path / "prometheus.yml", {"vllm": list(by_instance)}, interval_s=SCRAPE_S)
        prometheus = start_prometheus(config, tmp_path, ready_timeout_s=600)
        wait_targets_up(prometheus.url, 2, timeout_s=600)
        seed_step_cost(home, list(by_instance))
        command = [
            "autopilot", "--prometheus", prometheus.url, "--match", '{job="vllm"}',
            "--config-template", str(beds / "vllm-{port}" / "config.toml"),
            "--restart-template", f"{sys.executable} {beds}/vllm-{{port}}/restart.py",
            "--health-timeout", str(START_TIMEOUT_S), "--auto", "--audit", str(trail), *LIMITS,
        ]  # fmt: skip
        with (
            steady_load([server.url for server in replicas], concurrency=2, max_tokens=32) as loads,
            spectop_running(command, home) as process,
        ):
            output = Output(process)
            deadline = time.monotonic() + HANG_GUARD_S
            while not any(r.outcome in END_OF_CYCLE for r in records_of(trail)):
                assert process.poll() is None, f"the autopilot stopped:\n{output.join()}"
                assert time.monotonic() < deadline, f"no full cycle (hang guard):\n{output.join()}"
                time.sleep(0.5)
            process.send_signal(signal.SIGINT)  # the cycle is over: leave (each config as it is now)
            code = process.wait(timeout=HANG_GUARD_S)
            said = output.join()
        assert code == 0, said
        assert sum(load.sent for load in loads) > 0
        now_k = {instance: served_k(server.url) for instance, server in by_instance.items()}
    finally:
        if prometheus is not None:
            prometheus.stop()
        for server in replicas:
            server.stop()
    history = run_spectop(["autopilot", "--history", "--audit", str(trail)], home, timeout_s=600)
    took = time.monotonic() - began

    records = records_of(trail)
    for record in records:
        print(record.line())
    print(history.stdout)
    started = [r for r in records if r.outcome == "started"]
    assert sorted(r.instance for r in started) == sorted(by_instance)
    assert all(r.from_k == START_K for r in started)
    trials = [r for r in records if r.outcome in ("kept", "promoted", "rolled_back")]
    canary = trials[0]
    print(
        f"the cycle decided: {canary.line()}"
        + "".join(f"\n  then: {r.line()}" for r in trials[1:])
        + f"\n  ({took:.0f} s in all; servers now at k {now_k}; load errors {loads[0].errors[-1:]})",
        flush=True,
    )
    # the trigger: the advisor's line on the pooled figures; the diff: k alone
    assert canary.from_k == START_K and canary.to_k is not None and canary.to_k != START_K
    to_k = canary.to_k
    assert canary.trigger.startswith(f"k={START_K} now · k={to_k} would be "), canary.trigger
    assert f"-num_speculative_tokens = {START_K}" in canary.diff, canary.diff
    assert f"+num_speculative_tokens = {to_k}" in canary.diff, canary.diff
    changed = [
        line for line in canary.diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(changed) == 2 and all("num_speculative_tokens" in line for line in changed), canary.diff
    # compared on the same live traffic with the unchanged replica: a verdict and its figures
    assert canary.verdict is not None, f"no comparison: {canary.reason}"
    assert canary.before.samples > 0 and canary.after.samples > 0
    if canary.outcome == "kept":
        assert canary.verdict == "better" and canary.gain_low is not None and canary.gain_low > 0
        assert canary.sureness is not None and canary.sureness >= 0.95
        promotion = trials[1]
        assert promotion.instance != canary.instance, promotion
        assert (promotion.from_k, promotion.to_k) == (START_K, to_k), promotion
        assert promotion.outcome in ("promoted", "rolled_back"), promotion
        if promotion.outcome == "promoted":
            assert promotion.verdict == "not worse" and promotion.sureness is not None
        verified = {canary.instance} | ({promotion.instance} if promotion.outcome == "promoted" else set())
    else:
        assert canary.outcome == "rolled_back"
        assert canary.verdict in ("worse", "no difference", "inconclusive", "better"), canary  # better: TTFT
        verified = set()
    # every file at its verified new k (and the server answering with it) or byte for byte as found
    for instance, server in by_instance.items():
        now = server.config.read_bytes()
        if instance in verified:
            opened = open_config(server.config)
            assert opened.document is not None, opened.syntax_error
            assert file_k(opened.document) == to_k and now_k[instance] == to_k
            old, new = found[instance].decode(), now.decode()
            assert unified_diff(old, new, server.config.name) == canary.diff
        else:
            assert now == found[instance], instance
            assert now_k[instance] == START_K
    left = {r.instance: r.reason for r in records if r.outcome == "left"}
    assert sorted(left) == sorted(by_instance), left
    assert not any("CHANGED" in reason for reason in left.values()), left
    # --history: every record's line, and the summary of what was kept against the starting config
    assert history.returncode == 0, history.stderr
    shown = history.stdout.splitlines()
    assert [line for line in shown[:-1] if "did not read" not in line] == [r.line() for r in records]
    assert shown[-1] == audit.summary(records)
    kept = sum(r.outcome == "kept" for r in records)
    promoted = sum(r.outcome == "promoted" for r in records)
    rolled = sum(r.outcome == "rolled_back" for r in records)
    assert shown[-1].startswith(f"{kept} change(s) kept, {promoted} promotion(s), {rolled} rolled back")
    if kept:
        assert f"k={START_K} -> k={to_k}:" in shown[-1]
