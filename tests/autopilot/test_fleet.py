"""The autopilot on four sims behind a real Prometheus: it finds the better k on a canary, proves it,
promotes it one replica at a time, and the replicas' speed moves as the advisor predicted. A canary that
turns out worse, or that dies of OOM at start-up, is rolled back byte for byte; with differences within
noise the autopilot changes nothing over ten minutes (a clock thirty times faster). `spectop autopilot
--prometheus` as a dry run says what it would do and why, and changes nothing."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.autopilot.conftest import DECAYING, FAST, ROOT, WITHIN_NOISE, SimFleet, fleet_speed, run_until
from tests.fleet.conftest import NEEDS_PROMETHEUS
from tui.autopilot import audit
from tui.autopilot.policy import Limits
from tui.autopilot.targets import from_templates

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


def test_the_templates_name_each_instance_s_file_and_command() -> None:
    target = from_templates(
        "10.0.0.5:8001", "vllm a", "/etc/vllm/{port}.toml", "restart.sh {host} {job} {instance}"
    )
    assert target.config == Path("/etc/vllm/8001.toml")
    assert target.restart_command == ["restart.sh", "10.0.0.5", "vllm a", "10.0.0.5:8001"]
    assert target.url == "http://10.0.0.5:8001"
    assert target.health_timeout_s == 120  # the default; --health-timeout sets it for slow starters
    slow = from_templates("10.0.0.5:8001", None, "/{port}.toml", "true", health_timeout_s=900)
    assert slow.health_timeout_s == 900 and slow.changer(None).health_timeout_s == 900  # type: ignore[arg-type]


def test_a_health_timeout_must_be_positive() -> None:
    command = [
        sys.executable, "-m", "tui", "autopilot", "--prometheus", "http://127.0.0.1:9", "--config-template",
        "{port}.toml", "--restart-template", "true", "--health-timeout", "0",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 2 and "--health-timeout must be > 0" in done.stderr + done.stdout


def test_a_dry_run_on_a_fleet_proposes_and_changes_nothing(sim_fleet: SimFleet, tmp_path: Path) -> None:
    for instance, sim in sim_fleet.by_instance.items():
        (tmp_path / f"port-{instance.rsplit(':', 1)[1]}.toml").symlink_to(sim.config)
        sim_fleet.control(instance, {"acceptance": DECAYING})
    found = {sim.config: sim.config.read_bytes() for sim in sim_fleet.by_instance.values()}
    command = [
        sys.executable, "-m", "tui", "autopilot", "--prometheus", sim_fleet.prometheus.url,
        "--config-template", str(tmp_path / "port-{port}.toml"), "--restart-template", "false {port}",
        "--sim-step-cost", "--interval", "1", "--sustained", "2", "--audit", str(tmp_path / "trail.jsonl"),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:  # until the proposal
        lines.append(line.rstrip())
        if "(dry run: --auto to act)" in line:
            process.send_signal(signal.SIGINT)
            break
    lines += process.stdout.read().splitlines()
    assert process.wait() == 0
    print("\n".join(lines))
    assert lines[0].startswith("spectop autopilot: dry run (--auto to act)")
    assert any("would set k=2 on 127.0.0.1:" in line and "k=2 would be" in line for line in lines)
    assert sum("config left as found (k=4)" in line for line in lines) == 4
    assert {path: path.read_bytes() for path in found} == found
