"""A canary that turns out worse, or that dies of OOM at start-up, is rolled back byte for byte; with
differences within noise the autopilot changes nothing over ten minutes (a clock thirty times faster)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.autopilot.conftest import DECAYING, FAST, WITHIN_NOISE, SimFleet, run_until
from tests.fleet.conftest import NEEDS_PROMETHEUS
from tui.autopilot import audit
from tui.autopilot.policy import Limits

pytestmark = NEEDS_PROMETHEUS


def found(fleet: SimFleet) -> dict[str, bytes]:
    return {instance: sim.config.read_bytes() for instance, sim in fleet.by_instance.items()}


@pytest.mark.parametrize(
    ("made_worse", "why"),
    [
        ({"speed": 0.5}, "the change did not pay"),
        ({"slow_first_token_s": 0.3}, "TTFT rose"),
        ({"error_rate": 0.3}, "errors rose"),
    ],
)
async def test_a_canary_made_worse_is_rolled_back_byte_for_byte(
    sim_fleet: SimFleet, tmp_path: Path, made_worse: dict[str, object], why: str
) -> None:
    trail, before = tmp_path / "autopilot.jsonl", found(sim_fleet)
    async with httpx.AsyncClient() as client:
        pilot = sim_fleet.pilot(trail, client)
        for instance in sim_fleet.by_instance:
            sim_fleet.control(instance, {"acceptance": DECAYING})
        await run_until(pilot, lambda: pilot.trial is not None, rounds=80)
        canary = pilot.trial.target.name if pilot.trial else ""
        sim_fleet.control(canary, made_worse)  # whatever k it has now: half speed, slow first tokens, 500s
        await run_until(pilot, lambda: pilot.trial is None, rounds=120)
    print("\n".join(sim_fleet.lines))
    rolled = [r for r in audit.read(trail)[0] if r.outcome == "rolled_back"]
    assert [r.instance for r in rolled] == [canary] and rolled[0].reason.startswith(why)
    assert found(sim_fleet) == before


async def test_an_oom_at_start_up_is_rolled_back_at_once(sim_fleet: SimFleet, tmp_path: Path) -> None:
    trail, before = tmp_path / "autopilot.jsonl", found(sim_fleet)
    async with httpx.AsyncClient() as client:
        pilot = sim_fleet.pilot(trail, client)
        await pilot.step(await pilot.eyes())
        canary = sorted(pilot.targets)[0]
        # k=9 needs 0.18 of the GPU; gpu_memory_utilization 0.85 leaves 0.15: the sim dies like vLLM
        await pilot.start_trial(canary, 9, "a k too big for the memory left", promotion=False)
        assert pilot.trial is None and pilot.k[canary] == 4
        assert await pilot.healthy(pilot.targets[canary])  # started again from dead, on the old config
    print("\n".join(sim_fleet.lines))
    rolled = [r for r in audit.read(trail)[0] if r.outcome == "rolled_back"]
    assert len(rolled) == 1 and "out of memory" in rolled[0].reason.lower()
    assert found(sim_fleet) == before


async def test_within_noise_nothing_changes_for_ten_minutes(sim_fleet: SimFleet, tmp_path: Path) -> None:
    trail, before = tmp_path / "autopilot.jsonl", found(sim_fleet)
    now = [0.0]

    def clock() -> float:
        return now[0]

    async def sleep(seconds: float) -> None:  # thirty times faster than the wall clock
        await asyncio.sleep(seconds / 30)
        now[0] += seconds

    limits = Limits(margin=FAST.margin, sustained_s=60, quiet_s=60, interval_s=10, test_limit_s=300)
    async with httpx.AsyncClient() as client:
        pilot = sim_fleet.pilot(trail, client, limits=limits, clock=clock, sleep=sleep)
        for instance in sim_fleet.by_instance:
            sim_fleet.control(instance, {"acceptance": WITHIN_NOISE})
        words: list[str] = []
        for _ in range(60):  # 600 s of the autopilot's clock
            seen = await pilot.eyes()
            await pilot.step(seen)
            advice, _ = pilot.advice(seen) or (None, None)
            words.append(advice.line() if advice else "–")
            await pilot.sleep(limits.interval_s)
    print("\n".join(sim_fleet.lines), "\n", "\n".join(sorted(set(words))))
    assert now[0] >= 600 and pilot.changes == []
    assert [r.outcome for r in audit.read(trail)[0]] == ["started"] * 4
    assert found(sim_fleet) == before
