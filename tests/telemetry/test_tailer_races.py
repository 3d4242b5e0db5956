"""`LogTailer` in the races `tail -F` survives, at its default poll interval: each file operation sequence
runs without yielding to the event loop, so it lands between two polls (or inside one read); no line may
be lost."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest
from test_tailer import Follower, _append, _until

from tui.telemetry import tailer as tailer_module
from tui.telemetry.tailer import LogTailer


def _numbered(prefix: str, count: int) -> list[str]:
    return [f"{prefix} line {number:04d} " + "x" * 40 for number in range(count)]


def _write_lines(path: Path, lines: list[str]) -> None:
    _append(path, "".join(line + "\n" for line in lines))


class DefaultPollFollower(Follower):
    """`Follower` with the tailer's own default poll interval (the one the CLI and dashboard use)."""

    def __init__(self, path: Path, **options: object) -> None:
        super().__init__(path, **options)
        self.tailer = LogTailer(path, **options)  # type: ignore[arg-type]


async def test_rotated_files_present_before_the_start_are_not_replayed(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    _write_lines(tmp_path / "server.log.2", ["from an older rotation 2"])
    _write_lines(tmp_path / "server.log.1", ["from an older rotation 1"])
    log.write_text("")
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        _write_lines(log, ["before"])
        os.rename(tmp_path / "server.log.1", tmp_path / "server.log.2")
        os.rename(log, tmp_path / "server.log.1")
        _write_lines(log, ["after"])
        await follower.wait_for("after")
        _write_lines(log, ["later"])
        await follower.wait_for("later")
    assert follower.payload() == ["before", "after", "later"]


async def test_copytruncate_regrowing_past_the_old_offset_loses_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    before, after = _numbered("before", 100), _numbered("after", 400)
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        _write_lines(log, before)
        await follower.wait_for(before[-1])
        shutil.copy(log, tmp_path / "server.log.1")
        with open(log, "r+b") as handle:
            handle.truncate(0)
        _write_lines(log, after)  # 4× the old size, before the tailer looks again
        await follower.wait_for(after[-1])
    assert follower.payload() == before + after


async def test_copytruncate_with_the_same_first_bytes_is_still_seen(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    banner = "=" * 100 + " server starting " + "=" * 100
    log.write_text(banner + "\n")
    before, after = _numbered("before", 50), _numbered("after", 200)
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        _write_lines(log, before)
        await follower.wait_for(before[-1])
        with open(log, "r+b") as handle:
            handle.truncate(0)
        _write_lines(log, [banner, *after])  # starts like the old content, then differs
        await follower.wait_for(after[-1])
    assert follower.payload() == [*before, banner, *after]


async def test_a_missing_file_is_waited_for_and_the_wait_is_reported(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    notices: list[str] = []
    async with Follower(log, on_notice=notices.append) as follower:
        await _until(lambda: bool(notices), "a notice")
        assert "waiting for" in notices[0] and "later.log" in notices[0]
        log.write_text("first\n")
        await follower.wait_for("first")
    assert follower.lines == ["first"]
    assert len(notices) == 2 and "appeared" in notices[1]


@pytest.mark.parametrize(
    ("rotations", "new_file_last"),
    [(2, True), (3, True), (3, False)],  # False: the writer has not made the next file yet
)
async def test_rotations_between_polls_lose_nothing_and_keep_file_order(
    tmp_path: Path, rotations: int, new_file_last: bool
) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    batches = [_numbered(f"file{index}", 50) for index in range(rotations + int(new_file_last))]
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        for index, batch in enumerate(batches):
            _write_lines(log, batch)
            if index == rotations:
                break
            for number in range(index, 0, -1):  # .n → .n+1, then the live file → .1 (logrotate's order)
                os.rename(tmp_path / f"server.log.{number}", tmp_path / f"server.log.{number + 1}")
            os.rename(log, tmp_path / "server.log.1")
        await follower.wait_for(batches[-1][-1])
    assert follower.payload() == [line for batch in batches for line in batch]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify wake-ups are Linux only")
async def test_a_rotation_wakes_the_tailer_before_its_next_poll(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("old\n")
    async with Follower(log, from_start=True) as follower:
        follower.tailer.poll_interval_s = 60.0  # longer than the wait below: only inotify can wake it
        await follower.wait_for("old")
        await asyncio.sleep(0.2)  # the first step is over and the tailer waits
        os.rename(log, tmp_path / "server.log.1")
        log.write_text("new\n")
        await follower.wait_for("new")
    assert follower.lines == ["old", "new"]


async def test_rotations_seen_one_by_one_read_each_file_once(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        for index in range(3):
            _write_lines(log, [f"file {index}"])
            await follower.wait_for(f"file {index}")
            for number in range(index, 0, -1):
                os.rename(tmp_path / f"server.log.{number}", tmp_path / f"server.log.{number + 1}")
            os.rename(log, tmp_path / "server.log.1")
            log.write_text("")
        _write_lines(log, ["last"])
        await follower.wait_for("last")
        await follower.sync(log)  # a few more polls: nothing read twice
    assert follower.payload() == ["file 0", "file 1", "file 2", "last"]


async def test_other_files_named_like_the_log_are_not_read(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        _write_lines(tmp_path / "server.log.lock", ["not a log"])
        _write_lines(tmp_path / "server.log_stderr", ["not this one either"])
        _write_lines(tmp_path / "server.log.1.gz", ["compressed"])
        _write_lines(log, ["before"])
        os.rename(log, tmp_path / "server.log.1")
        _write_lines(log, ["after"])
        await follower.wait_for("after")
    assert follower.payload() == ["before", "after"]


async def test_lines_written_to_the_rotated_file_before_the_writer_reopens_are_read(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        _write_lines(log, ["old 1"])
        os.rename(log, tmp_path / "server.log.1")  # logrotate: rename, create, then signal the server
        _write_lines(log, ["new 1"])
        await follower.wait_for("new 1")  # the tailer has moved to the new file
        _write_lines(tmp_path / "server.log.1", ["old 2, before the server reopened its log"])
        _write_lines(log, ["new 2"])
        await follower.wait_for("old 2, before the server reopened its log")  # read within LINGER_S
        await follower.wait_for("new 2")
    late = "old 2, before the server reopened its log"
    assert sorted(follower.payload()) == sorted(["old 1", "new 1", late, "new 2"])


async def test_files_rotated_while_the_path_is_empty_are_read(tmp_path: Path) -> None:
    """A rotation storm whose writer creates the next file only later: each file is written, renamed over
    `.1` (the one before it is gone then) and the path stays empty until the next file. The tailer finds
    each rotated file while it is still at `.1`, without a new file at the path to tell it."""
    log = tmp_path / "server.log"
    log.write_text("")
    batches = [_numbered(f"file{index}", 100) for index in range(4)]
    async with DefaultPollFollower(log) as follower:
        await follower.sync(log)
        for batch in batches:
            _write_lines(log, batch)
            os.rename(log, tmp_path / "server.log.1")
            await follower.wait_for(batch[-1])
    assert follower.payload() == [line for batch in batches for line in batch]


def _held_by_this_process(inode: int) -> bool:
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.stat(f"/proc/self/fd/{fd}").st_ino == inode:
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify wake-ups are Linux only")
async def test_files_rotated_while_the_reader_is_busy_are_held_and_read(tmp_path: Path) -> None:
    """A reader still busy with the lines already read (the dashboard parsing a burst of them) leaves the
    tailer no turn; the files made and renamed over meanwhile are taken hold of at once and read after."""
    log = tmp_path / "server.log"
    log.write_text("first\n")
    lines = LogTailer(log, from_start=True).lines()
    assert await anext(lines) == "first"  # the reader now holds on to this line
    batches = [_numbered(f"file{index}", 100) for index in range(3)]
    for batch in batches:
        _write_lines(log, batch)
        inode = log.stat().st_ino
        os.rename(log, tmp_path / "server.log.1")  # renamed over the file before it
        await _until(lambda inode=inode: _held_by_this_process(inode), f"the tailer to hold {inode}")
    log.write_text("last\n")
    read = []
    async for line in lines:
        read.append(line)
        if line == "last":
            break
    await lines.aclose()
    assert read == [line for batch in batches for line in batch] + ["last"]


async def test_a_file_on_the_inode_of_one_already_read_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a rotation storm a file read and let go is deleted and its inode number given to the next file,
    whose first bytes (the same time stamp, the same logger) can be the same: it is still a new file."""
    monkeypatch.setattr(tailer_module, "LINGER_S", 0.0)  # a drained rotated file is let go at once
    log = tmp_path / "server.log"
    first = _numbered("first", 50)
    log.write_text("")
    async with DefaultPollFollower(log, watch=False) as follower:
        await follower.sync(log)
        _write_lines(log, first)
        os.rename(log, tmp_path / "server.log.1")
        _write_lines(log, ["second"])
        await follower.wait_for("second")
        let_go = (tmp_path / "server.log.1").stat().st_ino
        await _until(lambda: not _held_by_this_process(let_go), "the first file let go")
        same_start = (tmp_path / "server.log.1").read_bytes()
        os.unlink(tmp_path / "server.log.1")
        os.rename(log, tmp_path / "server.log.1")
        _append(log, same_start + b"third\n")
        if log.stat().st_ino != let_go:
            pytest.skip("the filesystem gave the new file another inode number")
        os.rename(log, tmp_path / "server.log.2")
        _write_lines(log, ["last"])
        await follower.wait_for("last")
        assert "third" in follower.lines


async def test_copytruncate_seen_by_the_first_bytes_alone(tmp_path: Path) -> None:
    """A copytruncate is seen by the first bytes' fingerprint when size and the bytes before the old offset
    say nothing: the new content is longer, and repeats the old content's last lines exactly at the old offset
    (a server that prints the same heartbeat line again and again). `tail -F` loses none of it; neither may
    we."""
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
