"""The autopilot on four sims behind a real Prometheus: it finds the better k on a canary, proves it,
promotes it one replica at a time, and the replicas' speed moves as the advisor predicted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.autopilot.conftest import DECAYING, SimFleet, fleet_speed, run_until
from tests.fleet.conftest import NEEDS_PROMETHEUS
from tui.autopilot import audit

pytestmark = NEEDS_PROMETHEUS


async def test_the_better_k_is_proven_on_a_canary_and_promoted(sim_fleet: SimFleet, tmp_path: Path) -> None:
    trail = tmp_path / "autopilot.jsonl"
    async with httpx.AsyncClient() as client:
        pilot = sim_fleet.pilot(trail, client)
        for instance in sim_fleet.by_instance:  # the traffic changed: drafts past the second are rejected
            sim_fleet.control(instance, {"acceptance": DECAYING})
        await asyncio.sleep(4)  # a rate window of the new traffic
        before = await fleet_speed(pilot, 6)
        await run_until(pilot, lambda: pilot.trial is not None, rounds=80)
        await run_until(pilot, lambda: set(pilot.k.values()) == {2} and pilot.trial is None, rounds=300)
        await asyncio.sleep(4)
        after = await fleet_speed(pilot, 6)
    records, _ = audit.read(trail)
    kept = [r for r in records if r.outcome == "kept"]
    promoted = [r for r in records if r.outcome == "promoted"]
    print("\n".join(sim_fleet.lines), "\n", "\n".join(r.line() for r in records), audit.summary(records))
    predicted = kept[0].predicted
    moved = after / before
    print(f"predicted {predicted}, fleet {before:.0f} -> {after:.0f} tokens/s per request ({moved:.3f}x)")
    assert [r.verdict for r in kept] == ["better"] and len(promoted) == 3
    assert all(r.verdict == "not worse" for r in promoted)
    assert kept[0].gain_low is not None and kept[0].gain_low > 0
    assert predicted is not None and abs(moved - predicted) < 0.1
