"""Recording and reading back: same figures, bad lines named by file and line, pacing."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from tui.sources.replay import ReplayClock, replay
from tui.telemetry.events import SpecDecodeEvent
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import (
    HeaderRecord,
    LogRecord,
    RecordedEndpoint,
    RecordingError,
    RecordingWriter,
    check_recording,
    parse_record,
    read_records,
    recording_parts,
)


def _reading(name: str, time: float, figures: Figures, up: bool = True) -> EndpointReading:
    return EndpointReading(
        name=name,
        url="http://127.0.0.1:9",
        time=time,
        up=up,
        error=None if up else "connection refused",
        backend="vllm",
        model="m",
        window_s=60.0,
        figures=figures,
        consecutive_failures=0 if up else 1,
    )


async def test_record_then_read_gives_the_same_figures(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    figures = Figures(
        generation_tokens_per_s=594.9, acceptance_rate=0.699194, per_position_acceptance=[0.8, 0.6]
    )
    event = SpecDecodeEvent(acceptance_rate=0.7, line="SpecDecoding metrics: ...")
    writer = RecordingWriter(path)
    await writer.open([RecordedEndpoint(name="a", url="http://127.0.0.1:9")], now=10.0)
    await writer.write_reading(_reading("a", 11.0, figures))
    await writer.write_reading(_reading("a", 13.0, Figures(), up=False))
    await writer.write_log_event("a", 12.0, event)
    await writer.close()
    records = [record async for record in read_records(path)]
    assert [record.kind for record in records] == ["header", "reading", "reading", "log"]
    assert isinstance(records[1], EndpointReading) and records[1].figures == figures
    assert records[2].up is False and records[2].error == "connection refused"
    assert isinstance(records[3], LogRecord) and records[3].event == event


async def test_appending_keeps_earlier_sessions_and_a_never_rotated_recording_is_one_part(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    (tmp_path / "r.jsonl.1").write_text(HeaderRecord(time=0.0).model_dump_json() + "\n", encoding="utf-8")
    for start in (1.0, 2.0):
        writer = RecordingWriter(path)
        await writer.open([], now=start)
        await writer.write_reading(_reading("a", start, Figures()))
        await writer.close()
    headers = [record async for record in read_records(path) if isinstance(record, HeaderRecord)]
    assert [header.time for header in headers] == [1.0, 2.0]
    assert recording_parts(path) == [path]  # a stale FILE.1 is not part of it: FILE does not continue it


def test_bad_lines_name_file_line_and_field() -> None:
    with pytest.raises(RecordingError, match=r"r.jsonl:3: not JSON"):
        parse_record("{nope", "r.jsonl", 3)
    with pytest.raises(RecordingError, match=r"r.jsonl:4: field reading.time"):
        parse_record(json.dumps({"kind": "reading", "name": "a", "up": True}), "r.jsonl", 4)
    with pytest.raises(RecordingError, match=r"r.jsonl:5: field"):
        parse_record(json.dumps({"kind": "mystery"}), "r.jsonl", 5)
    assert parse_record("   \n") is None


async def test_reader_reports_bad_lines_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    good = EndpointReading(name="a", time=1.0, up=True).model_dump_json()
    path.write_text(f"{good}\ngarbage\n{good}\n", encoding="utf-8")
    problems: list[RecordingError] = []
    records = [record async for record in read_records(path, problems.append)]
    assert len(records) == 2
    assert len(problems) == 1 and ":2:" in str(problems[0])


async def test_replay_paces_by_record_times_and_speed(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    lines = [
        EndpointReading(name="a", time=100.0 + step * 0.2, up=True).model_dump_json() for step in range(4)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    clock = ReplayClock(speed=2.0)  # 0.6 s of recording → about 0.3 s
    started = time.monotonic()
    seen = [record.time async for record in replay(path, clock)]
    elapsed = time.monotonic() - started
    assert seen == pytest.approx([100.0, 100.2, 100.4, 100.6])
    assert elapsed >= 0.25  # never faster than asked (only a lower bound: slow machines are fine)
    assert clock.now == seen[-1]


async def test_replay_at_speed_zero_does_not_wait_and_pause_holds(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    lines = [EndpointReading(name="a", time=step * 3600.0, up=True).model_dump_json() for step in range(3)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    clock = ReplayClock(speed=0)
    seen = [record async for record in replay(path, clock)]
    assert len(seen) == 3  # hours of recording, no waiting (the test would time out otherwise)

    paused = ReplayClock(speed=0)
    paused.paused = True
    iterator = replay(path, paused).__aiter__()
    first = asyncio.ensure_future(iterator.__anext__())
    await asyncio.sleep(0.2)
    assert not first.done()
    paused.paused = False
    assert (await asyncio.wait_for(first, 2.0)).time == 0.0
    await iterator.aclose()


def _event(number: int) -> SpecDecodeEvent:
    return SpecDecodeEvent(acceptance_rate=0.7, accepted_tokens=number, line=f"SpecDecoding {number}")


async def _write_events(writer: RecordingWriter, count: int, *, close: bool = True) -> None:
    """A recording of endpoint "a": its header, then `count` log events (each ~360 bytes)."""
    await writer.open([RecordedEndpoint(name="a")], now=0.0)
    for number in range(count):
        await writer.write_log_event("a", float(number), _event(number))
    if close:
        await writer.close()


async def test_writes_are_buffered_until_a_flush_and_all_there_after_close(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path, flush_interval_s=3600)  # no timed flush during the test
    await _write_events(writer, 500, close=False)  # ~180 KB: under the batch size
    on_disk = path.read_text(encoding="utf-8").splitlines()
    assert len(on_disk) == 1 and json.loads(on_disk[0])["kind"] == "header"  # one write for the batch
    await writer.close()
    records = [record async for record in read_records(path)]
    assert [record.event.accepted_tokens for record in records[1:]] == list(range(500))  # type: ignore[union-attr]


async def test_buffered_records_reach_the_disk_within_the_flush_interval(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path, flush_interval_s=0.05)
    await writer.open([], now=0.0)
    await writer.write_log_event("a", 1.0, _event(1))
    deadline = time.monotonic() + 20
    while len(path.read_text(encoding="utf-8").splitlines()) < 2:
        assert time.monotonic() < deadline, "never flushed"
        await asyncio.sleep(0.02)
    await writer.close()


async def test_the_file_is_rotated_at_the_cap_says_so_and_replays_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rotated: list[Path] = []
    cap = 20_000
    writer = RecordingWriter(path, max_bytes=cap, on_rotate=rotated.append)
    await _write_events(writer, 1000)  # ~360 KB: several rotations
    assert sorted(file.name for file in tmp_path.iterdir()) == ["r.jsonl", "r.jsonl.1"]
    assert rotated and set(rotated) == {tmp_path / "r.jsonl.1"} and writer.rotations == len(rotated) >= 3
    for file in (path, tmp_path / "r.jsonl.1"):
        assert file.stat().st_size <= cap
        first = parse_record(file.read_text(encoding="utf-8").splitlines()[0])
        assert isinstance(first, HeaderRecord) and first.endpoints == [RecordedEndpoint(name="a")]
    first_of_current = parse_record(path.read_text(encoding="utf-8").splitlines()[0])
    assert isinstance(first_of_current, HeaderRecord) and first_of_current.continues
    assert recording_parts(path) == [tmp_path / "r.jsonl.1", path]
    played = [record async for record in replay(path, ReplayClock(speed=0)) if isinstance(record, LogRecord)]
    numbers = [record.event.accepted_tokens for record in played]  # type: ignore[union-attr]
    in_current = [record async for record in read_records(path) if isinstance(record, LogRecord)]
    assert len(numbers) > len(in_current)
    assert numbers == list(range(1000 - len(numbers), 1000))  # the newest, in order, none twice


def test_check_recording_names_the_first_bad_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('\n[model]\nname = "x"\n', encoding="utf-8")
    with pytest.raises(RecordingError, match=r"^line 2: not JSON"):
        check_recording(config)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(RecordingError, match="no records"):
        check_recording(empty)
    other_json = tmp_path / "other.jsonl"
    other_json.write_text('{"kind": "mystery"}\n', encoding="utf-8")
    with pytest.raises(RecordingError, match=r"^line 1: field"):
        check_recording(other_json)
    good = tmp_path / "good.jsonl"
    good.write_text(HeaderRecord(time=1.0).model_dump_json() + "\n", encoding="utf-8")
    check_recording(good)
