"""Where one k does not fit every load, the autopilot proposes vLLM's k by batch size as it does a k: held,
recorded in a dry run; in --auto written into the file, tested against the window before, kept when better
(and not proposed again) and promoted to the other replicas, the exact bytes put back when worse. No
server: the figures are given each interval and the restart is back at once."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from tests.advice.test_guard_control import PER_POSITION, _model
from tests.autopilot.conftest import ROOT, no_eyes, sim_config
from tui.advice.live import KeptModels
from tui.advice.stepcost import StepCostFile
from tui.autopilot import audit
from tui.autopilot.audit import AuditRecord
from tui.autopilot.loop import Autopilot
from tui.autopilot.observe import Seen
from tui.autopilot.policy import Limits
from tui.autopilot.targets import Target
from tui.telemetry.figures import Figures

URL = "http://127.0.0.1:8000"  # the step-cost model's server
REPLICAS = ("127.0.0.1:8000", "127.0.0.1:8001")
# k=1 is best alone, speculation off is best at 8 running requests: at k=1 and one running request, no
# other k is better, but a table is
TABLE = [[1, 1, 1], [2, 256, 0]]
WRITTEN = "num_speculative_tokens_per_batch_size = [[1, 1, 1], [2, 256, 0]]"
LIMITS = Limits(sustained_s=5, quiet_s=1, interval_s=1, test_limit_s=60)
GAINS = [0.1, 0.12, 0.09, 0.11, 0.1, 0.08, 0.1, 0.1]  # log(speed after / before), one per interval


def seen(speeds: dict[str, float], running: float = 1.0) -> dict[str, Seen]:
    return {
        name: Seen(True, Figures(
            per_position_acceptance=PER_POSITION, generation_tokens_per_s=speed, mean_acceptance_length=1.8,
            running=running, requests_per_s=2.0, tpot_mean_s=1.0 / speed,
        ), model="m")
        for name, speed in speeds.items()
    }  # fmt: skip


def better(step: int) -> float:
    return 50.0 * math.exp(GAINS[step % len(GAINS)])


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """/health and /metrics answer: a restart is back at once."""
    back = httpx.MockTransport(lambda request: httpx.Response(200))
    async with httpx.AsyncClient(transport=back) as client:
        yield client


class Run:
    """One server (its URL) or, with `fleet`, the two replicas, each with a vLLM file at k=1."""

    def __init__(self, tmp_path: Path, client: httpx.AsyncClient, *, auto: bool, fleet: bool = False) -> None:
        self.tmp_path, self.config = tmp_path, sim_config(tmp_path / "config.toml", 1)
        self.found = self.config.read_bytes()
        self.trail, self.lines, self.now = tmp_path / "autopilot.jsonl", list[str](), 0.0
        targets = {} if fleet else {URL: Target(URL, self.config, ["true"], URL)}
        self.pilot = Autopilot(
            targets, no_eyes, KeptModels(StepCostFile(models=[_model(8.0, 10.0)])), LIMITS, auto=auto,
            audit_path=self.trail, client=client, make_target=self.replica if fleet else None,
            clock=lambda: self.now, say=self.lines.append,
        )  # fmt: skip

    def replica(self, name: str, _seen: Seen) -> Target:
        config = sim_config(self.tmp_path / f"{name.replace(':', '-')}.toml", 1)
        return Target(name, config, ["true"], f"http://{name}")

    async def until(
        self, done: Callable[[], bool], speeds: Callable[[int], dict[str, float]], rounds: int = 60
    ) -> None:
        for step in range(rounds):
            await self.pilot.step(seen(speeds(step)))
            self.now += 1
            if done():
                return
        raise AssertionError(f"not done after {rounds} intervals:\n" + "\n".join(self.lines))

    def records(self, outcome: str) -> list[AuditRecord]:
        return [record for record in audit.read(self.trail)[0] if record.outcome == outcome]


async def test_a_dry_run_proposes_the_table_and_records_it(tmp_path: Path, client: httpx.AsyncClient) -> None:
    run = Run(tmp_path, client, auto=False)
    await run.until(lambda: bool(run.records("proposed")), lambda _: {URL: 50.0})
    (proposed,) = run.records("proposed")
    assert (proposed.from_k, proposed.to_k, proposed.to_table) == (1, 1, TABLE)
    assert proposed.trigger.startswith("one k does not fit every load: batch 1: k=1, 2-256: k=0 (k=1 ")
    assert " k=1->batch 1: k=1, 2-256: k=0 proposed · dry run" in proposed.line()
    assert any(
        line.startswith(f"would set batch 1: k=1, 2-256: k=0 on {URL} (k=1 now)") for line in run.lines
    )
    words = run.pilot.states[URL].words
    assert words == "watching · k=1 now · k by batch size 1: k=1, 2-256: k=0 (significant)"
    assert run.config.read_bytes() == run.found


async def test_auto_writes_the_table_and_keeps_it_when_better(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    run = Run(tmp_path, client, auto=True)
    await run.until(lambda: run.pilot.trial is not None, lambda _: {URL: 50.0})
    assert WRITTEN in run.config.read_text() and "num_speculative_tokens = 1" in run.config.read_text()
    assert run.pilot.states[URL].words == "canary batch 1: k=1, 2-256: k=0: restarted, quiet period"
    await run.until(lambda: run.pilot.trial is None, lambda step: {URL: better(step)})
    (kept,) = run.records("kept")
    assert (kept.verdict, kept.to_table) == ("better", TABLE)
    assert f"+{WRITTEN}" in kept.diff
    assert run.pilot.states[URL].last.startswith("kept batch 1: k=1, 2-256: k=0: better: +11%")
    for running in [1.0] * 15 + [8.0] * 15:  # the file runs the table now: it is not proposed again, and at
        await run.pilot.step(seen({URL: 55.0}, running))  # 8 requests its k there (0) is not bettered by k=0
        run.now += 1
    assert len(run.pilot.changes) == 1 and run.pilot.trial is None, run.lines
    await run.pilot.leave()
    assert WRITTEN in run.config.read_text()
    left = run.records("left")[-1]
    assert left.reason == "config left at its last verified state (batch 1: k=1, 2-256: k=0)"


async def test_a_worse_table_goes_back_byte_for_byte(tmp_path: Path, client: httpx.AsyncClient) -> None:
    run = Run(tmp_path, client, auto=True)
    await run.until(lambda: run.pilot.trial is not None, lambda _: {URL: 50.0})
    await run.until(lambda: run.pilot.trial is None, lambda step: {URL: 2500.0 / better(step)})
    (rolled,) = run.records("rolled_back")
    assert (rolled.verdict, rolled.to_table) == ("worse", TABLE)
    assert run.config.read_bytes() == run.found
    assert run.pilot.states[URL].last.startswith("rolled back to k=1: worse")
    assert run.pilot.runs(URL) == (1, None)


async def test_a_fleets_kept_table_is_promoted_to_the_other_replica(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    run = Run(tmp_path, client, auto=True, fleet=True)
    canary, other = REPLICAS
    await run.until(lambda: bool(run.records("kept")), lambda step: {canary: better(step), other: 50.0})
    await run.until(lambda: bool(run.records("promoted")), lambda _: dict.fromkeys(REPLICAS, 55.0))
    (promoted,) = run.records("promoted")
    assert (promoted.instance, promoted.to_table) == (other, TABLE)
    assert promoted.trigger == "the verified canary's batch 1: k=1, 2-256: k=0"
    for name in REPLICAS:
        assert WRITTEN in run.pilot.targets[name].config.read_text()
        assert run.pilot.runs(name) == (1, TABLE)


async def test_a_file_other_than_vllms_gets_no_table_and_says_why_once(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    run = Run(tmp_path, client, auto=True)
    sglang = (ROOT / "sample_configs" / "sglang_settings.json").read_text(encoding="utf-8")
    for key, value in (("speculative_num_steps", 3), ("speculative_num_draft_tokens", 4)):
        sglang = sglang.replace(f'"{key}": {value}', f'"{key}": {value - 2}')  # k=1
    config = run.pilot.targets[URL].config = tmp_path / "settings.json"
    config.write_text(sglang, encoding="utf-8")
    for _ in range(30):
        await run.pilot.step(seen({URL: 50.0}))
        run.now += 1
    assert [line for line in run.lines if "batch size" in line] == [
        f"{URL}: no k by batch size (1: k=1, 2-256: k=0) proposed: "
        "only a vLLM config takes a k-by-batch-size table"
    ]
    assert not run.pilot.changes and not run.records("proposed")
    assert run.pilot.states[URL].words.startswith("watching · k=1 now")
    assert "batch size" not in run.pilot.states[URL].words
    assert config.read_text(encoding="utf-8") == sglang


def test_the_audit_line_says_the_table_and_an_old_record_still_reads(tmp_path: Path) -> None:
    record = AuditRecord(
        time=0.0, outcome="kept", instance="a", from_k=2, to_k=3, to_table=[[1, 1, 3], [2, 256, 1]], gain=0.1
    )
    assert ": k=2->batch 1: k=3, 2-256: k=1 kept · " in record.line()
    assert audit.summary([record]).startswith(
        "1 change(s) kept, 0 promotion(s), 0 rolled back; k=2 -> batch 1: "
    )
    trail = tmp_path / "autopilot.jsonl"  # written before records had a table
    trail.write_text(
        '{"time": 0.0, "outcome": "kept", "instance": "a", "from_k": 4, "to_k": 2, "gain": 0.1}\n'
    )
    (old,), bad = audit.read(trail)
    assert bad == 0 and old.to_table is None and ": k=4->2 kept · " in old.line()
    assert "k=4 -> k=2: +10%" in audit.summary([old])
