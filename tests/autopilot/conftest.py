"""Four `spectop sim` vLLM replicas (the demo's supervisor: restart by SIGHUP, from dead after an OOM)
scraped every second by a real Prometheus, and an autopilot on them whose clock the test may speed up."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.fleet.conftest import PrometheusProcess, start_prometheus, wait_targets_up, write_config
from tui.advice.calibrate import sim_step_cost
from tui.advice.live import KeptModels
from tui.advice.stepcost import StepCostFile
from tui.autopilot.loop import Autopilot
from tui.autopilot.observe import FleetEyes, Seen
from tui.autopilot.policy import Limits
from tui.autopilot.targets import Target
from tui.fleet.poller import FleetPoller
from tui.settings import PrometheusSettings
from tui.sim.supervisor import DemoSim, DemoSims

ROOT = Path(__file__).resolve().parents[2]
# k=4 pays while the drafts are accepted deep; /sim/control's DECAYING makes k=2 the better one.
DEEP = [0.9, 0.85, 0.8, 0.75]
DECAYING = [0.85, 0.45, 0.2, 0.08]
WITHIN_NOISE = [0.9, 0.75, 0.55, 0.35]  # k=3 1.03x over k=4 by the model: below the 1.05x bar
# One sample a second (Prometheus scrapes every second): a test takes its 8 samples in some 10 s.
FAST = Limits(margin=0.05, sustained_s=2, max_changes_per_hour=20, quiet_s=3, interval_s=1, test_limit_s=60)


def sim_config(path: Path, k: int, acceptance: list[float] = DEEP) -> Path:
    text = (ROOT / "sample_configs" / "config.toml").read_text(encoding="utf-8")
    text = text.replace("num_speculative_tokens = 2", f"num_speculative_tokens = {k}")
    path.write_text(f"{text}\n[sim]\nacceptance = {acceptance}\n", encoding="utf-8")
    return path


def kept_models(*sims: DemoSim) -> KeptModels:
    """The sims' step-cost models, as `--sim-step-cost` has them."""
    models = [sim_step_cost(sim.config, sim.url) for sim in sims]
    return KeptModels(StepCostFile(models=[model for model in models if model is not None]))


@dataclass
class SimFleet:
    sims: DemoSims
    prometheus: PrometheusProcess
    by_instance: dict[str, DemoSim] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    def control(self, instance: str, body: dict[str, object]) -> None:
        answer = httpx.post(f"http://{instance}/sim/control", json=body, timeout=5)
        assert answer.status_code == 200, answer.text

    def target(self, instance: str, _seen: Seen | None = None) -> Target:
        sim = self.by_instance[instance]
        return Target(instance, sim.config, self.sims.restart_command(sim.name), f"http://{instance}")

    def pilot(
        self,
        audit: Path,
        client: httpx.AsyncClient,
        *,
        limits: Limits = FAST,
        auto: bool = True,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], object] | None = None,
    ) -> Autopilot:
        settings = PrometheusSettings(url=self.prometheus.url)
        poller = FleetPoller(settings, 3.0)
        extra = {} if clock is None else {"clock": clock, "sleep": sleep}
        kept = kept_models(*self.by_instance.values())
        return Autopilot(
            {}, FleetEyes(poller), kept, limits, auto=auto, audit_path=audit, client=client,
            make_target=self.target, say=self.lines.append, **extra,  # type: ignore[arg-type]
        )  # fmt: skip


@contextmanager
def decaying_sims(folder: Path, *names: str, acceptance: list[float] = DECAYING) -> Iterator[DemoSims]:
    """Sims at k=4 whose drafts past the second are mostly rejected (k=2 is better), unless told otherwise."""
    sims = DemoSims(folder, background_load_rps=4.0)
    try:
        for name in names:
            sim = DemoSim.in_folder(name, sim_config(folder / f"{name}.toml", 4, acceptance), folder)
            sims.sims.append(sim)
            sims.start(sim)
        sims.watch()
        yield sims
    finally:
        sims.stop()


@pytest.fixture
def one_sim(tmp_path: Path) -> Iterator[DemoSims]:
    with decaying_sims(tmp_path, "one") as sims:
        yield sims


@pytest.fixture
def sim_fleet(tmp_path: Path) -> Iterator[SimFleet]:
    with decaying_sims(tmp_path, *"abcd", acceptance=DEEP) as sims:
        addresses = [sim.url.removeprefix("http://") for sim in sims.sims]
        prometheus = start_prometheus(
            write_config(tmp_path / "prometheus.yml", {"vllm": addresses}), tmp_path
        )
        try:
            wait_targets_up(prometheus.url, len(addresses))
            yield SimFleet(sims, prometheus, dict(zip(addresses, sims.sims, strict=True)))
        finally:
            prometheus.stop()


async def no_eyes() -> dict[str, Seen]:
    """Eyes that see nothing: the test passes each interval's figures to `step` itself."""
    return {}


async def run_until(pilot: Autopilot, done: Callable[[], bool], rounds: int) -> None:
    """Step the autopilot every interval until `done()` (or `rounds` intervals: the test then fails)."""
    for _ in range(rounds):
        began = pilot.clock()
        await pilot.step(await pilot.eyes())
        if done():
            return
        await pilot.rest(began)
    raise AssertionError(f"not done after {rounds} intervals")


async def fleet_speed(pilot: Autopilot, rounds: int) -> float:
    """The replicas' mean decode tokens/s per request over `rounds` intervals."""
    from tui.autopilot.observe import speed

    values: list[float] = []
    for _ in range(rounds):
        seen = await pilot.eyes()
        values += [v for what in seen.values() if what.up and (v := speed(what.figures)) is not None]
        await asyncio.sleep(pilot.limits.interval_s)
    return sum(values) / len(values)
