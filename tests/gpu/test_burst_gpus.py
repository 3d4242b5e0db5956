"""The GPUs of a burst: throttling, shared GPUs, energy per arm (also over its own rounds), via the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.sim.conftest import sim_processes, write_vllm_config
from tests.telemetry.metrics_test_server import Reply, ReplyServer
from tui.bench.report.summary import burst_summary
from tui.bench.report.text import note_lines
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord
from tui.bench.session import with_gpu
from tui.gpu.burst import BurstGpuWatch, watch_for
from tui.gpu.records import ArmGpuRecord
from tui.settings import EndpointSettings
from tui.sim.config import SimConfig
from tui.sim.gpu_page import GPU_METRICS_PATH, SimGpus

SETTINGS = BurstSettingsRecord(
    prompt_set="chat", prompt_set_digest="x", requests=1, concurrency=1, max_tokens=8, temperature=0.0
)


def _pages(k: int, running: int, count: int = 60) -> list[Reply]:
    gpus = SimGpus(SimConfig(num_speculative_tokens=k), lambda: (running, 0, 0.5))
    return [Reply(gpus.render(now=step * 0.1).encode()) for step in range(count)]


async def _watched(watch: BurstGpuWatch) -> tuple[float, float]:
    await watch.start()
    start = time.time()
    await asyncio.sleep(0.4)
    end = time.time()
    await watch.stop()
    watch.close()
    return start, end


def _summary_notes(record: object) -> list[str]:
    arm = ArmResult(label="a", name="A", url="http://a", gpu=record)  # type: ignore[arg-type]
    result = BurstResult(started_at=datetime.now(UTC), duration_s=1.0, settings=SETTINGS, arms=[arm])
    return note_lines(burst_summary(result))


async def test_a_power_capped_arm_is_throttled_with_a_warning() -> None:
    async with ReplyServer(_pages(k=3, running=16)) as capped, httpx.AsyncClient() as client:
        arm = EndpointSettings(name="B", url="http://10.1.2.3:8000", gpu_metrics_url=capped.url + "/metrics")
        watch = BurstGpuWatch([arm], client, interval_s=0.05)
        start, end = await _watched(watch)
        record = watch.record("http://10.1.2.3:8000/", start, end, output_tokens=1000)
    assert record is not None and record.throttled is True
    assert record.throttle_note is not None and "power cap" in record.throttle_note
    assert record.energy_j is not None and record.energy_per_token_j == record.energy_j / 1000
    assert any(line.startswith("WARNING A GPU: clocks throttled") for line in _summary_notes(record))


async def test_an_arm_without_gpu_source_says_why() -> None:
    async with httpx.AsyncClient() as client:
        arm = EndpointSettings(name="A", url="http://10.1.2.3:8000")  # another host, no exporter
        watch = BurstGpuWatch([arm], client, interval_s=0.05)
        start, end = await _watched(watch)
        record = watch.record("http://10.1.2.3:8000", start, end, output_tokens=10)
    assert record is not None and record.energy_j is None and record.throttled is None
    assert record.note is not None and "gpu_metrics_url" in record.note
    assert any("A GPU:" in line and "gpu_metrics_url" in line for line in _summary_notes(record))


async def test_shared_gpus_have_energy_only_over_each_arms_own_rounds() -> None:
    # Arms A and B on the same GPUs (one exporter page): "–" for both under the parallel schedule; under
    # the alternate schedule only one arm runs at a time.
    async with ReplyServer(_pages(k=0, running=4)) as page, httpx.AsyncClient() as client:
        url = page.url + "/metrics"
        arms = [
            EndpointSettings(name="A", url="http://10.1.2.3:8000", gpu_metrics_url=url),
            EndpointSettings(name="B", url="http://10.1.2.3:8001", gpu_metrics_url=url),
        ]
        watch = BurstGpuWatch(arms, client, interval_s=0.05)
        start, end = await _watched(watch)
    parallel = watch.record("http://10.1.2.3:8000", start, end, output_tokens=1000)
    assert parallel is not None and parallel.throttled is False
    assert parallel.energy_j is None and parallel.energy_per_token_j is None
    assert parallel.tokens_per_joule is None
    assert parallel.note is not None and "same GPUs" in parallel.note
    third = (end - start) / 3
    a_rounds = [(start, start + third), (start + 2 * third, end)]
    b_rounds = [(start + third, start + 2 * third)]
    a = watch.record("http://10.1.2.3:8000", start, end, output_tokens=1000, phases=a_rounds)
    b = watch.record("http://10.1.2.3:8001", start, end, output_tokens=400, phases=b_rounds)
    assert a is not None and b is not None
    parts = [watch.monitor.energy_between("A", first, last) for first, last in a_rounds]
    assert all(part is not None for part in parts)
    assert a.energy_j == pytest.approx(sum(part.joules for part in parts if part is not None))
    assert a.energy_per_token_j == pytest.approx(a.energy_j / 1000) and a.note is None
    whole = watch.monitor.energy_between("A", start, end)
    assert whole is not None and b.energy_j is not None
    assert a.energy_j + b.energy_j == pytest.approx(whole.joules, rel=1e-6)  # the rounds, split: no guess
    assert a.energy_scope is not None and "own 2 rounds" in a.energy_scope
    assert any(line.startswith("A GPU energy: over its own 2 rounds") for line in _summary_notes(a))


def test_with_gpu_gives_the_watch_each_arms_rounds_as_moments() -> None:
    calls: list[object] = []

    class Watch:
        async def start(self) -> None: ...
        async def stop(self) -> None: ...

        def record(
            self, url: str, start: float, end: float, output_tokens: int, phases: object = None
        ) -> ArmGpuRecord | None:
            calls.append((url, start, end, phases))
            return None

    arm = ArmResult(label="a", name="A", url="http://a", started_s=1.0, finished_s=9.0,
                    phases_s=[(1.0, 4.0), (6.0, 9.0)])  # fmt: skip
    started = datetime(2026, 1, 1, tzinfo=UTC)
    with_gpu(BurstResult(started_at=started, duration_s=10.0, settings=SETTINGS, arms=[arm]), Watch())
    origin = started.timestamp()
    assert calls == [
        ("http://a", origin + 1, origin + 9, [(origin + 1, origin + 4), (origin + 6, origin + 9)])
    ]


def test_the_burst_screen_watches_the_arms_with_a_gpu_metrics_url() -> None:
    client = httpx.AsyncClient()
    exporter = "http://10.9.9.9:9400/metrics"
    endpoints = [
        EndpointSettings(name="a", url="http://10.9.9.9:8000", gpu_metrics_url=exporter),
        EndpointSettings(name="b", url="http://10.9.9.9:8001"),
    ]
    watch = watch_for(["http://10.9.9.9:8000/", "http://10.9.9.9:8001"], endpoints, client)
    assert watch is not None and set(watch.urls.values()) == {"a"}
    assert watch_for(["http://10.9.9.9:8001"], endpoints, client) is None


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_gpu_sims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """A (no speculation) and B (k = 3, which draws more power: the sim caps it) with --gpu."""
    folder = tmp_path_factory.mktemp("burst_energy")
    off = write_vllm_config(folder / "off.toml", enabled=False, k=0)
    on = write_vllm_config(folder / "on.toml", k=3)
    with sim_processes(["--gpu", "--config", str(off)], ["--gpu", "--config", str(on)]) as urls:
        yield urls


def test_bench_energy_per_token_per_arm_and_verdict(two_gpu_sims: list[str], tmp_path: Path) -> None:
    a_url, b_url = two_gpu_sims
    out = tmp_path / "burst.json"
    command = [
        sys.executable, "-m", "tui", "bench", "--a", a_url, "--b", b_url,
        "--a-gpu-metrics-url", a_url + GPU_METRICS_PATH, "--b-gpu-metrics-url", b_url + GPU_METRICS_PATH,
        "--requests", "16", "--concurrency", "8", "--rounds", "2", "--warmup", "0", "--max-tokens", "128",
        "--prompts", "chat", "--no-history", "--json", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    a, b = summary["a"], summary["b"]
    for arm in (a, b):
        assert arm["energy_j"] is not None and arm["energy_j"] > 0, arm["gpu"]
        assert arm["energy_per_token_j"] is not None
        assert arm["tokens_per_joule"] == pytest.approx(1 / arm["energy_per_token_j"])
    ratio = b["energy_per_token_j"] / a["energy_per_token_j"]
    assert f"uses {ratio:.2f}x the energy per token" in summary["comparison"]["verdict"]
    assert "energy per token" in done.stdout and "tokens per joule" in done.stdout
    # The sim's page has clock event reasons: whether each arm was throttled is known (a power-capped arm's
    # warning: above).
    assert a["throttled"] is not None and b["throttled"] is not None
