"""A copytruncate is seen by the first bytes' fingerprint when size and the bytes before the old offset
say nothing: the new content is longer, and repeats the old content's last lines exactly at the old offset
(a server that prints the same heartbeat line again and again). `tail -F` loses none of it; neither may
we."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "telemetry"))

from test_tailer_races import DefaultPollFollower, _write_lines


async def test_copytruncate_seen_by_the_first_bytes_alone(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    heartbeat = "INFO 05-01 14:39:05 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s"
    before = ["INFO 05-01 14:00:00 [api_server.py:1] vLLM API server version 0.11.0 (run 1)"] + [
        heartbeat
    ] * 20
    again = ["INFO 05-01 14:30:00 [api_server.py:1] vLLM API server version 0.11.0 (run 2)"] + [
        heartbeat
    ] * 20
    after = [*again, *(f"INFO after line {number:04d}" for number in range(50))]
    assert len(before[0]) == len(again[0])  # the old offset falls on the same heartbeat bytes
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        markers = log.read_text().splitlines()  # "sync-0": the new content starts as long, but differs
        _write_lines(log, before)
        await follower.wait_for(before[-1])
        with open(log, "r+b") as handle:
            handle.truncate(0)
        _write_lines(
            log, [f"sync-{'z' * (len(marker) - 5)}" for marker in markers] + after
        )  # longer, at once
        await follower.wait_for(after[-1])
    assert follower.payload() == before + after
