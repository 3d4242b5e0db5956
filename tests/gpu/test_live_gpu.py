"""LiveSource polls the GPU sources with the shared client, one poll per tick (one still in flight skips
the tick), and yields a typed `GpusPolled` that the board keeps (per-endpoint view and series)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.telemetry.metrics_test_server import Reply, ReplyServer
from tui.board import Board
from tui.gpu.burst import watch_for
from tui.settings import EndpointSettings, Settings
from tui.sources.live import LiveSource
from tui.sources.updates import GpusPolled

SAMPLE = Path(__file__).parent / "samples" / "dcgm_exporter_3.3_h100x2.prom"


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


def test_the_burst_screen_watches_the_arms_with_a_gpu_metrics_url() -> None:
    client = httpx.AsyncClient()
    endpoints = [
        EndpointSettings(
            name="a", url="http://10.9.9.9:8000", gpu_metrics_url="http://10.9.9.9:9400/metrics"
        ),
        EndpointSettings(name="b", url="http://10.9.9.9:8001"),
    ]
    watch = watch_for(["http://10.9.9.9:8000/", "http://10.9.9.9:8001"], endpoints, client)
    assert watch is not None and set(watch.urls.values()) == {"a"}
    assert watch_for(["http://10.9.9.9:8001"], endpoints, client) is None
