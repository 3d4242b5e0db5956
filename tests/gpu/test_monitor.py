"""GpuMonitor: each source read once per poll, endpoints mapped to GPUs; LiveSource polls it per tick."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.gpu.fake_pynvml import FakeDevice, FakeNvml
from tests.telemetry.metrics_test_server import Reply, ReplyServer
from tui.board import Board
from tui.gpu.monitor import GpuMonitor
from tui.settings import EndpointSettings, Settings
from tui.sources.live import LiveSource
from tui.sources.updates import GpusPolled

SAMPLE = Path(__file__).parent / "samples" / "dcgm_exporter_3.3_h100x2.prom"
UUID_1 = "GPU-edc718f8-e593-6468-b9f9-563d508366ed"
HANG_GUARD_S = 60.0  # a local exporter read on a busy host: only a hang ends it


async def test_endpoints_on_one_exporter_and_on_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml(devices=[FakeDevice(uuid="GPU-local-0"), FakeDevice(uuid="GPU-local-1")])
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())
    async with ReplyServer([Reply(SAMPLE.read_bytes())]) as server, httpx.AsyncClient() as client:
        page = server.url + "/metrics"
        endpoints = [
            EndpointSettings(name="all", url="http://10.0.0.5:8000", gpu_metrics_url=page),
            EndpointSettings(name="one", url="http://10.0.0.5:8001", gpu_metrics_url=page, gpus=[UUID_1]),
            EndpointSettings(name="gone", url="http://10.0.0.5:8002", gpu_metrics_url=page, gpus=[5]),
            EndpointSettings(name="local", url="http://127.0.0.1:8000", gpus=[1]),
            EndpointSettings(name="remote", url="http://10.0.0.6:8000"),
        ]
        monitor = GpuMonitor(endpoints, client, timeout_s=HANG_GUARD_S)
        views = await monitor.poll()
        monitor.close()
    assert len(server.requests) == 1  # three endpoints, one exporter: one read
    assert [gpu.index for gpu in views["all"].gpus] == [0, 1]
    assert views["one"].keys == (UUID_1,)
    assert not views["gone"].available and views["gone"].reason is not None
    assert "gpus 5 not found" in views["gone"].reason and views["gone"].missing == ("5",)
    assert views["local"].source == "NVML" and views["local"].keys == ("GPU-local-1",)
    assert views["remote"].reason is not None and "gpu_metrics_url" in views["remote"].reason
    assert monitor.shared_keys() == {UUID_1}  # "all" and "one" both show GPU 1
    assert fake.shutdown_calls == 1


async def test_an_unreachable_exporter_is_the_endpoints_reason() -> None:
    async with ReplyServer([Reply(b"")]) as server:
        url = server.url + "/metrics"
    async with httpx.AsyncClient() as client:
        monitor = GpuMonitor([EndpointSettings(name="a", url="http://h:1", gpu_metrics_url=url)], client)
        view = (await monitor.poll())["a"]
    assert not view.available and view.reason is not None and "refused" in view.reason
    assert monitor.energy_between("a", 0, time.time()) is None


async def test_energy_and_throttling_of_an_endpoint_between_polls() -> None:
    pages = [
        SAMPLE.read_bytes(),
        SAMPLE.read_bytes()
        .replace(b"} 1893412554012", b"} 1893413154012")  # GPU 0: +600 J
        .replace(b"} 1876022117890", b"} 1876022517890"),  # GPU 1: +400 J
    ]
    async with ReplyServer([Reply(body) for body in pages]) as server, httpx.AsyncClient() as client:
        endpoints = [EndpointSettings(name="a", url="http://h:1", gpu_metrics_url=server.url + "/metrics")]
        monitor = GpuMonitor(endpoints, client, timeout_s=HANG_GUARD_S)
        await monitor.poll()
        start = time.time()
        await monitor.poll()
        end = time.time()
    history, keys = monitor.history("a") or (None, ())
    assert history is not None and len(keys) == 2
    points = [history.points(key) for key in keys]
    first, last = points[0][0][0], points[0][-1][0]
    energy = monitor.energy_between("a", first, last)
    assert energy is not None and energy.method == "counter" and energy.joules == pytest.approx(1000.0)
    assert monitor.energy_between("a", first - 1, last) is None  # before the first reading: unknown
    condition = monitor.throttling_between("a", start - 60, end)
    assert condition is not None and condition.gpus == ("GPU 1",)  # the sample's GPU 1 is power capped


async def test_a_gpu_in_mig_mode_is_found_by_its_index() -> None:
    # dcgm-exporter 3.x: a MIG GPU only has per-instance lines; `gpus = [0]` finds the GPU they are of.
    page = (Path(__file__).parent / "samples" / "dcgm_exporter_3.3_h100_mig.prom").read_bytes()
    async with ReplyServer([Reply(page)]) as server, httpx.AsyncClient() as client:
        url = server.url + "/metrics"
        endpoint = EndpointSettings(name="mig", url="http://10.0.0.5:8000", gpu_metrics_url=url, gpus=[0])
        monitor = GpuMonitor([endpoint], client, timeout_s=HANG_GUARD_S)
        view = (await monitor.poll())["mig"]
        monitor.close()
    assert view.available and view.reason is None and not view.missing
    (gpu,) = view.gpus
    assert gpu.index == 0 and len(gpu.slices) == 4


async def test_one_gpu_poll_per_tick_with_the_shared_client_into_the_board() -> None:
    async with (
        ReplyServer([Reply(SAMPLE.read_bytes(), delay_s=0.3)]) as exporter,
        httpx.AsyncClient() as client,
    ):
        endpoints = [
            EndpointSettings(name="a", url="http://10.9.9.9:8000", gpu_metrics_url=exporter.url + "/metrics"),
            EndpointSettings(name="b", url="http://10.9.9.9:8001", gpu_metrics_url=exporter.url + "/metrics"),
            EndpointSettings(name="far", url="http://10.9.9.8:8000"),
        ]
        settings = Settings(endpoints=endpoints)
        source = LiveSource(settings, http_client=client)
        assert source.gpu_monitor.client is client
        for _ in range(3):  # ticks while the first poll is still in flight
            source.poll_gpus_due()
        update = await asyncio.wait_for(source._queue.get(), 10)
        await source.close()
    assert isinstance(update, GpusPolled)
    assert len(exporter.requests) == 1  # two endpoints on one exporter, three ticks: one read
    board = Board(settings)
    applied = board.apply(update)
    assert set(applied.changed) == {"a", "b", "far"}
    assert [gpu.index for gpu in board.gpus["a"].gpus] == [0, 1]
    assert board.gpu_shared == frozenset(board.gpus["a"].keys)  # a and b show the same GPUs: the strip
    assert board.gpus["far"].reason is not None and "gpu_metrics_url" in board.gpus["far"].reason
    key = board.gpus["a"].keys[0]
    assert len(board.gpu_history.series(key, "power_w")) == 1
