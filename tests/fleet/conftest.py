"""A real Prometheus (Debian's `prometheus`; the tests skip without it) scraping real `spectop sim`
processes on 127.0.0.1, and the 40-instance fake fleet, for the fleet-mode tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fleet.fake_fleet import Fleet40, fleet_app, fleet_settings
from tests.fleet.fake_prometheus import FakePrometheus
from tui.ui.app import SpectopApp

ROOT = Path(__file__).resolve().parents[2]
READY_PREFIX = "spectop sim: "
SCRAPE_INTERVAL_S = 1


def prometheus_binary() -> str | None:
    on_path = shutil.which("prometheus")
    return on_path or ("/usr/bin/prometheus" if os.access("/usr/bin/prometheus", os.X_OK) else None)


NEEDS_PROMETHEUS = pytest.mark.skipif(
    prometheus_binary() is None,
    reason="needs the prometheus binary (Debian package `prometheus`; `.ci/run` installs it when it can)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn_sim(flavor: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    """`spectop sim --port 0` as a process; returns it and its base URL (from the ready line)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "sim", "--port", "0", "--flavor", flavor, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith(READY_PREFIX):
        process.kill()
        process.wait()
        pytest.fail(f"spectop sim --flavor {flavor}: no ready line, got {line!r}")
    return process, line.rsplit(" ", 1)[1]


def stop(process: subprocess.Popen[Any], timeout_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `timeout_s`."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def write_config(path: Path, targets: dict[str, list[str]], *, interval_s: int = SCRAPE_INTERVAL_S) -> Path:
    """A prometheus.yml with one static job per key, scraping its host:port targets."""
    lines = [
        "global:",
        f"  scrape_interval: {interval_s}s",
        f"  scrape_timeout: {interval_s}s",
        "scrape_configs:",
    ]
    for job, addresses in targets.items():
        lines += [f"  - job_name: {job}", "    static_configs:", "      - targets:"]
        lines += [f"          - {address}" for address in addresses]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass
class PrometheusProcess:
    url: str
    process: subprocess.Popen[bytes]
    data_dir: Path

    def stop(self) -> None:
        stop(self.process, timeout_s=10.0)


def start_prometheus(config: Path, data_dir: Path, *, ready_timeout_s: float = 30.0) -> PrometheusProcess:
    binary = prometheus_binary()
    assert binary is not None
    port = free_port()
    log = (data_dir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--storage.tsdb.path={data_dir / 'tsdb'}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=data_dir,
    )
    log.close()
    server = PrometheusProcess(f"http://127.0.0.1:{port}", process, data_dir)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if httpx.get(f"{server.url}/-/ready", timeout=1.0).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    pytest.fail(f"prometheus never became ready: {(data_dir / 'prometheus.log').read_text()[-2000:]}")


def wait_targets_up(url: str, count: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            answer = httpx.get(f"{url}/api/v1/query", params={"query": "sum(up)"}, timeout=2.0).json()
            result = answer["data"]["result"]
            if result and float(result[0]["value"][1]) >= count:
                return
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    pytest.fail(f"the {count} targets never were up in Prometheus at {url}")


@dataclass
class Fleet:
    prometheus: PrometheusProcess
    sims: dict[str, tuple[subprocess.Popen[str], str]] = field(default_factory=dict)
    started: float = 0.0  # time.time() when every target was up

    def instance(self, name: str) -> str:
        return self.sims[name][1].removeprefix("http://")

    def url(self, name: str) -> str:
        return self.sims[name][1]


@contextmanager
def running_fleet(directory: Path, sims: dict[str, str], jobs: dict[str, list[str]]) -> Iterator[Fleet]:
    """`sims` (name → flavor) as `spectop sim` processes, scraped every second by a Prometheus whose
    jobs are `jobs` (job → sim names); everything stopped on the way out."""
    if prometheus_binary() is None:
        pytest.skip("needs the prometheus binary (Debian package `prometheus`)")
    started: dict[str, tuple[subprocess.Popen[str], str]] = {}
    try:
        for name, flavor in sims.items():
            started[name] = spawn_sim(flavor, "--background-load", "2", "--seed", "7")
        targets = {
            job: [started[name][1].removeprefix("http://") for name in names] for job, names in jobs.items()
        }
        config = write_config(directory / "prometheus.yml", targets)
        prometheus = start_prometheus(config, directory)
        try:
            wait_targets_up(prometheus.url, len(started))
            yield Fleet(prometheus, started, time.time())
        finally:
            prometheus.stop()
    finally:
        for process, _ in started.values():
            stop(process)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Three sims (vLLM, SGLang, llama.cpp) plus a vLLM one to kill, scraped every second."""
    sims = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp", "victim": "vllm"}
    jobs = {"vllm": ["vllm", "victim"], "sglang": ["sglang"], "llamacpp": ["llamacpp"]}
    with running_fleet(tmp_path_factory.mktemp("fleet"), sims, jobs) as running:
        yield running


# --- the dashboard on 40 instances behind the fake Prometheus (tests/fleet/fake_fleet.py) ----------------


@pytest.fixture
def fleet40() -> Fleet40:
    """The 40 instances whose figures the fake Prometheus answers (switch `failing` to break it)."""
    return Fleet40()


@pytest.fixture
async def fleet40_prometheus(fleet40: Fleet40) -> AsyncIterator[FakePrometheus]:
    async with FakePrometheus(fleet40.answer) as fake:
        yield fake


@pytest.fixture
def fleet40_app(fleet40_prometheus: FakePrometheus) -> SpectopApp:
    """`spectop --prometheus URL` on the 40 instances (grouped by model), not started yet."""
    return fleet_app(fleet_settings(fleet40_prometheus.url))
