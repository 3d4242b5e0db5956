"""Ctrl-C while a change's restart runs: the change is not verified, so it goes back byte for byte (and the
autopilot does not take its own write for someone else's)."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.autopilot.conftest import no_eyes, sim_config
from tui.advice.live import KeptModels
from tui.advice.stepcost import CostPoint, StepCostFile, StepCostModel, fit
from tui.autopilot import audit
from tui.autopilot.loop import Autopilot
from tui.autopilot.observe import Seen
from tui.autopilot.policy import Limits
from tui.autopilot.targets import Target
from tui.telemetry.figures import Figures

# Restarts slowly when the file has k=2 (the change), at once otherwise (the rollback).
SLOW_ON_K2 = (
    "import pathlib, sys, time; "
    "time.sleep(60 if 'num_speculative_tokens = 2' in pathlib.Path(sys.argv[1]).read_text() else 0)"
)


async def test_a_change_interrupted_during_its_restart_is_put_back(tmp_path: Path) -> None:
    config = sim_config(tmp_path / "config.toml", 4)
    found = config.read_bytes()
    target = Target("one", config, [sys.executable, "-c", SLOW_ON_K2, str(config)], "http://127.0.0.1:9", 0.5)
    trail, lines = tmp_path / "autopilot.jsonl", []
    async with httpx.AsyncClient() as client:
        pilot = Autopilot(
            {}, no_eyes, KeptModels(), Limits(), auto=True, audit_path=trail, client=client, say=lines.append
        )
        await pilot.adopt("one", target)
        changing = asyncio.create_task(pilot.start_trial("one", 2, "a test", promotion=False))
        while config.read_bytes() == found:  # written: the restart command runs
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        changing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await changing
        await pilot.leave()
    print("\n".join(lines))
    assert config.read_bytes() == found
    records = audit.read(trail)[0]
    assert [r.outcome for r in records] == ["started", "rolled_back", "left"]
    assert records[1].reason.startswith("interrupted before the test was clear")
    assert records[2].reason == "config left as found (k=4)"


async def test_after_a_rollback_the_advice_must_hold_again_before_the_next_change(tmp_path: Path) -> None:
    """The advice held before a change says nothing of the figures after its rollback: no new change at
    once on the strength of it, only when the advice has held `sustained_s` again."""
    points = [
        CostPoint(k=k, concurrency=1, decode_tokens_per_s=1.0 / ((1 + k) * 0.02), mean_length=1.0)
        for k in (1, 2, 3)
    ]
    cost, dependent, residual = fit(points)
    model = StepCostModel(
        endpoint="127.0.0.1:9", key="speculative.num_speculative_tokens", fitted_at=datetime.now(UTC),
        cost=cost, load_dependent=dependent, k_range=(1, 3), loads=[1.0], residual=residual, points=points,
    )  # fmt: skip
    figures = Figures(
        per_position_acceptance=[0.3, 0.1, 0.03], generation_tokens_per_s=14.3, mean_acceptance_length=1.43,
        running=1.0,
    )  # fmt: skip
    seen = {name: Seen(True, figures) for name in ("127.0.0.1:9", "127.0.0.1:10")}
    now = [0.0]
    trail, lines = tmp_path / "autopilot.jsonl", []
    limits = Limits(sustained_s=10, quiet_s=1, interval_s=1)

    def target(name: str, _seen: Seen) -> Target:  # never back: every change fails its health check
        config = sim_config(tmp_path / f"{name.replace(':', '-')}.toml", 3)
        return Target(name, config, ["true"], f"http://{name}", 0.2)

    async with httpx.AsyncClient() as client:
        pilot = Autopilot(
            {}, no_eyes, KeptModels(StepCostFile(models=[model])), limits, auto=True, audit_path=trail,
            client=client, make_target=target, clock=lambda: now[0], say=lines.append,
        )  # fmt: skip
        while not pilot.changes:  # the advice (k=1) held 10 s: the canary changed, and rolled back
            await pilot.step(seen)
            now[0] += 1
        assert pilot.trial is None and pilot.changes == [10.0]
        for _ in range(9):  # within 10 s of the rollback: no new change
            await pilot.step(seen)
            now[0] += 1
        assert pilot.changes == [10.0]
        while len(pilot.changes) < 2:
            await pilot.step(seen)
            now[0] += 1
    print("\n".join(lines))
    assert pilot.changes[1] >= 20.0
    outcomes = [r.outcome for r in audit.read(trail)[0]]
    assert outcomes == ["started", "started", "rolled_back", "rolled_back"]
