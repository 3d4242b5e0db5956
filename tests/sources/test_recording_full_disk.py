"""A full disk under `--record`: readings still published, the recording fails alone, said once."""

from __future__ import annotations

import asyncio
import errno
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "telemetry"))

from metrics_test_server import Reply, ReplyServer, sample_body

from tui.settings import EndpointSettings, Settings
from tui.sources import LiveSource
from tui.sources.updates import Notice, ReadingArrived
from tui.telemetry.recording import RecordingWriter

HANG_S = 60.0


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The disk fills after the header: every later write to the recording fails with ENOSPC."""
    writes: list[int] = []
    original = RecordingWriter._write_blocking

    def write(self: RecordingWriter, data: bytes) -> Path | None:
        writes.append(len(data))
        if len(writes) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, data)

    monkeypatch.setattr(RecordingWriter, "_write_blocking", write)
    return writes


async def test_readings_go_on_when_the_recording_disk_is_full(tmp_path: Path, full_disk: list[int]) -> None:
    pages = [Reply(sample_body("vllm", name)) for name in ("metrics_t0.txt", "metrics_t1.txt")] * 10
    async with ReplyServer(pages) as server:
        endpoint = EndpointSettings(name="gpu", url=server.url, backend="vllm")
        source = LiveSource(
            Settings(poll_interval_s=0.05, endpoints=[endpoint]), record_path=tmp_path / "r.jsonl"
        )
        assert source.recorder is None
        readings, notices = 0, []

        async def collect() -> None:
            nonlocal readings
            async for update in source.updates():
                if isinstance(update, ReadingArrived):
                    readings += 1
                elif isinstance(update, Notice):
                    notices.append(update)
                if readings >= 6:
                    return

        await source.start()
        assert source.recorder is not None
        source.recorder.flush_bytes = 1  # every reading is written at once: the first one fails
        try:
            async with asyncio.timeout(HANG_S):  # finds a frozen card; no speed target
                await collect()
        finally:
            await source.close()  # raises nothing
    assert readings >= 6  # the card kept updating after the disk filled
    errors = [notice for notice in notices if notice.severity == "error"]
    assert len(errors) == 1, notices  # said once
    assert "no space left on the device" in errors[0].message and "r.jsonl" in errors[0].message
    assert source.recorder is None and "recording FAILED" in source.status()
    assert len(full_disk) == 2  # the header, then the one write that failed: no retry storm
