"""`LogTailer` against real file operations: rotation, copytruncate, recreation, partial lines, races."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from cancel_turns import ENDED_WITHIN_S, TURNS, cancel_ends, loop_turns
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.telemetry import tailer as tailer_module
from tui.telemetry.logs import LogParser
from tui.telemetry.logs import follow as follow_module
from tui.telemetry.logs.follow import follow_events
from tui.telemetry.tailer import LineSplitter, LogTailer, open_watch

POLL_S = 0.02
TIMEOUT_S = 20.0  # shorter than any poll interval a test sets to show a wake-up


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT_S
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


class Follower:
    """Runs `LogTailer.lines()` in a task and collects what it yields."""

    def __init__(
        self, path: Path, *, default_poll: bool = False, synced: bool = False, **options: object
    ) -> None:
        self.path, self.synced = path, synced  # synced: `sync` before the test's first write
        if not default_poll:  # else the tailer's own interval, the one the CLI and dashboard use
            options["poll_interval_s"] = POLL_S
        self.tailer = LogTailer(path, **options)  # type: ignore[arg-type]
        self.lines: list[str] = []
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Follower:
        async def run() -> None:
            async for line in self.tailer.lines():
                self.lines.append(line)

        self.task = asyncio.create_task(run())
        if self.synced:
            await self.sync(self.path)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task

    async def wait_for(self, line: str) -> None:
        await _until(lambda: line in self.lines, repr(line))
        assert self.task is not None and not self.task.done()

    async def sync(self, path: Path) -> None:
        """Append marker lines until the follower shows one: it is then positioned and reading."""
        for number in range(10_000):
            _append(path, f"sync-{number}\n")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S * 10):
                    while not any(line.startswith("sync-") for line in self.lines):
                        await asyncio.sleep(0.005)
                    return
        raise AssertionError("follower never started")

    def payload(self) -> list[str]:
        return [line for line in self.lines if not line.startswith("sync-")]


def _append(path: Path, text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    with open(path, "ab") as handle:
        handle.write(data)


@pytest.fixture
def log(tmp_path: Path) -> Path:  # the followed log, there and empty
    (path := tmp_path / "server.log").write_text("")
    return path


@pytest.mark.parametrize(
    ("from_start", "read"), [(False, ["new 1", "new 2"]), (True, ["old 1", "old 2", "new 1", "new 2"])]
)
async def test_starts_at_the_end_by_default_or_reads_existing_lines_first(
    log: Path, from_start: bool, read: list[str]
) -> None:
    log.write_text("old 1\nold 2\n")
    async with Follower(log, from_start=from_start, synced=not from_start) as follower:
        if from_start:
            await follower.wait_for("old 2")
        _append(log, "new 1\nnew 2\n")
        await follower.wait_for("new 2")
    assert follower.payload() == read


async def test_rotation_by_rename_then_new_file(tmp_path: Path, log: Path) -> None:
    async with Follower(log, synced=True) as follower:
        _append(log, "before rotation\n")
        _append(log, "last line of old file\n")
        os.rename(log, tmp_path / "server.log.1")
        _append(tmp_path / "server.log.1", "written after the rename\n")  # the writer still holds it
        log.write_text("first in new file\n")
        await follower.wait_for("first in new file")
        _append(log, "second in new file\n")
        await follower.wait_for("second in new file")
    payload = follower.payload()
    assert payload[:2] == ["before rotation", "last line of old file"]
    assert payload[-2:] == ["first in new file", "second in new file"]
    assert len(payload) in (4, 5)  # the post-rename write is read if it landed before the switch


# copytruncate beside a writer not in append mode: its next line lands at its old offset, after a hole of
# NUL bytes; that line must be read, as `tail -F` shows it.
async def test_the_first_line_after_a_nul_hole_is_kept(tmp_path: Path, log: Path) -> None:
    log.write_text("x" * 40_000 + "\n")  # the writer is far past the max line length
    writer = os.open(log, os.O_WRONLY)  # not O_APPEND: it writes at its own offset
    try:
        os.lseek(writer, 0, os.SEEK_END)
        async with Follower(log) as follower:
            await follower.sync(log)  # appends markers through another handle
            os.lseek(writer, 0, os.SEEK_END)
            os.write(writer, b"before truncate\n")
            await follower.wait_for("before truncate")
            shutil.copy(log, tmp_path / "server.log.1")
            os.truncate(log, 0)  # logrotate's copytruncate
            os.write(writer, b"first after the hole\n")  # at the old offset: NULs before it
            os.write(writer, b"second after the hole\n")
            await follower.wait_for("second after the hole")
    finally:
        os.close(writer)
    assert follower.payload()[-2:] == ["first after the hole", "second after the hole"]


async def test_deletion_then_recreation(log: Path) -> None:
    async with Follower(log, synced=True) as follower:
        _append(log, "old file\n")
        await follower.wait_for("old file")
        log.unlink()
        await asyncio.sleep(POLL_S * 3)  # the follower polls a missing path without failing
        log.write_text("recreated 1\nrecreated 2\n")
        await follower.wait_for("recreated 2")
    assert follower.payload() == ["old file", "recreated 1", "recreated 2"]


async def test_partial_line_is_held_until_complete(log: Path) -> None:
    async with Follower(log, synced=True) as follower:
        _append(log, "Decode batch, #running")
        await asyncio.sleep(POLL_S * 5)  # several reads see the half line
        assert follower.payload() == []
        _append(log, "-req: 3\n")
        await follower.wait_for("Decode batch, #running-req: 3")
    assert follower.payload() == ["Decode batch, #running-req: 3"]


async def test_over_long_line_is_truncated_and_following_lines_survive(log: Path) -> None:
    async with Follower(log, max_line_bytes=1000, synced=True) as follower:
        for _ in range(30):  # 300 KB without a newline, in several writes
            _append(log, "y" * 10_000)
        _append(log, "\nnext line\n")
        await follower.wait_for("next line")
    assert follower.payload() == ["y" * 1000, "next line"]


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"caf\xe9 \xff\xfe ok\n\xc3\xa9t\xc3\xa9\n", ["caf\ufffd \ufffd\ufffd ok", "été"]),  # invalid UTF-8
        (b"windows\r\nvllm continuation\r\n", ["windows", "vllm continuation"]),  # CRLF and CR endings
    ],
)
async def test_undecodable_bytes_are_replaced_and_line_ends_dropped(
    tmp_path: Path, data: bytes, lines: list[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(data)
    async with Follower(log, from_start=True) as follower:
        await follower.wait_for(lines[-1])
    assert follower.lines == lines


async def test_read_all_reads_once_keeps_a_partial_last_line_and_needs_a_file(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"one\ntwo\n" + b"z" * 50 + b"\nno newline at end")
    lines = [line async for line in LogTailer(log, max_line_bytes=20).read_all()]
    assert lines == ["one", "two", "z" * 20, "no newline at end"]
    with pytest.raises(FileNotFoundError):
        async for _ in LogTailer(tmp_path / "nope.log").read_all():
            pass


async def followed_events(
    log: Path, parser: LogParser, enough: Callable[[list[tuple[str | None, list[Any]]]], bool], **options: Any
) -> list[tuple[str | None, list[Any]]]:
    """What `follow_events` yields for `log` read from its start, until `enough` of it came."""
    received: list[tuple[str | None, list[Any]]] = []

    async def consume() -> None:
        async for line, events in follow_events(
            log, parser, from_start=True, poll_interval_s=POLL_S, **options
        ):
            received.append((line, list(events)))

    task = asyncio.create_task(consume())
    try:
        await _until(lambda: enough(received), "enough events")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return received


async def test_follow_events_flushes_a_traceback_when_the_log_goes_quiet(log: Path) -> None:
    log.write_text('Traceback (most recent call last):\n  File "x.py", line 1, in f\nRuntimeError: boom\n')
    received = await followed_events(
        log, LogParser(), lambda received: any(line is None for line, _ in received), idle_flush_s=0.2
    )
    assert [line for line, _ in received] == [
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in f',
        "RuntimeError: boom",
        None,
    ]
    flushed = received[-1][1]
    assert len(flushed) == 1 and flushed[0].category == "traceback"  # type: ignore[attr-defined]


def _reference(data: bytes, max_line_bytes: int) -> list[str]:
    pieces = data.split(b"\n")
    tail = pieces.pop()
    lines = [piece[:max_line_bytes].removesuffix(b"\r").decode("utf-8", "replace") for piece in pieces]
    if tail:
        lines.append(tail[:max_line_bytes].removesuffix(b"\r").decode("utf-8", "replace"))
    return lines


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"\n", b"\r", "é".encode(), b"\xff", b"xyz" * 7]), max_size=80).map(
        b"".join
    ),
    cuts=st.lists(st.integers(0, 600), max_size=12),
    max_line_bytes=st.integers(1, 40),
)
def test_any_chunking_gives_the_same_lines(data: bytes, cuts: list[int], max_line_bytes: int) -> None:
    splitter = LineSplitter(max_line_bytes)
    lines: list[str] = []
    start = 0
    for cut in [*sorted(cut for cut in cuts if cut <= len(data)), len(data)]:
        lines.extend(splitter.feed(data[start:cut]))
        start = cut
    tail = splitter.flush()
    if tail is not None:
        lines.append(tail)
    assert lines == _reference(data, max_line_bytes)


def test_line_splitter_bounds_memory_on_a_newline_free_stream_and_drops_nul_runs() -> None:
    splitter = LineSplitter(max_line_bytes=64)
    emitted: list[str] = []
    for _ in range(1000):
        emitted.extend(splitter.feed(b"a" * 1000))
        assert len(splitter._partial) <= 65
    emitted.extend(splitter.feed(b"\nb\n"))
    assert emitted == ["a" * 64, "b"]
    assert splitter.flush() is None
    # NUL runs (a copytruncate's hole) are dropped
    assert splitter.feed(b"\0" * 1000) == []
    assert splitter.feed(b"\0" * 1000 + b"line\n") == ["line"]


class _HandFedTailer:
    """Stands in for `LogTailer`: the test hands it lines (no file, no worker thread)."""

    def __init__(self) -> None:
        self.source: asyncio.Queue[str] = asyncio.Queue()

    async def lines(self) -> AsyncIterator[str]:
        while True:
            yield await self.source.get()


async def test_follow_events_ends_when_cancelled_as_a_line_arrives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    still_running = []
    for turns in TURNS:
        tailer = _HandFedTailer()
        monkeypatch.setattr(follow_module, "LogTailer", lambda *args, tailer=tailer, **options: tailer)

        async def consume() -> None:
            async for _ in follow_events(tmp_path / "server.log", LogParser(), idle_flush_s=60.0):
                pass

        task = asyncio.create_task(consume())
        await loop_turns(5)  # the follower waits for a line
        tailer.source.put_nowait("srv  log_server_r: request: GET /health 127.0.0.1 200")
        await loop_turns(turns)
        if not await cancel_ends(task):
            still_running.append(turns)
    assert still_running == [], f"cancelled {still_running} loop turns after a line: kept following"


async def test_directory_watch_wait_ends_when_cancelled_as_the_log_changes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    watch = open_watch(log)
    if watch is None:
        pytest.skip("no inotify here")
    swallowed = []
    try:
        for turns in TURNS:
            task = asyncio.create_task(watch.wait(60.0))
            await loop_turns(5)  # waiting for a change
            # A rotated file appears (a new name each time): inotify makes the watch readable at once.
            log.with_name(f"{log.name}.{turns}").write_text("rotated\n")
            await loop_turns(turns)
            if not task.cancel():
                assert task.result() is True  # woken before the cancel came: nothing to swallow
                continue
            await asyncio.wait({task}, timeout=ENDED_WITHIN_S)
            if not task.cancelled():
                swallowed.append(turns)
    finally:
        watch.close()
    assert swallowed == [], f"cancelled {swallowed} loop turns after the change: the wait returned"


# --- races at the default poll interval: each sequence runs without yielding to the event loop -----------


def _numbered(prefix: str, count: int) -> list[str]:
    return [f"{prefix} line {number:04d} " + "x" * 40 for number in range(count)]


def _write_lines(path: Path, lines: list[str]) -> None:
    _append(path, "".join(line + "\n" for line in lines))


def _rotate(log: Path, rotated: int) -> None:
    """logrotate's order: NAME.n → NAME.n+1 for the `rotated` files there, then the live file → NAME.1."""
    for number in range(rotated, 0, -1):
        os.rename(f"{log}.{number}", f"{log}.{number + 1}")
    os.rename(log, f"{log}.1")


async def test_rotated_files_present_before_the_start_are_not_replayed(tmp_path: Path, log: Path) -> None:
    _write_lines(tmp_path / "server.log.2", ["from an older rotation 2"])
    _write_lines(tmp_path / "server.log.1", ["from an older rotation 1"])
    async with Follower(log, default_poll=True, synced=True) as follower:
        _write_lines(log, ["before"])
        os.rename(tmp_path / "server.log.1", tmp_path / "server.log.2")
        os.rename(log, tmp_path / "server.log.1")
        _write_lines(log, ["after"])
        await follower.wait_for("after")
        _write_lines(log, ["later"])
        await follower.wait_for("later")
    assert follower.payload() == ["before", "after", "later"]


BANNER = "=" * 100 + " server starting " + "=" * 100


@pytest.mark.parametrize(
    ("start", "before", "after", "default_poll"),
    [
        ("x" * 5000 + "\n", ["before truncate"], ["after truncate"], False),
        # 4× the old size, before the tailer looks again
        ("", _numbered("before", 100), _numbered("after", 400), True),
        # starts like the old content, then differs
        (BANNER + "\n", _numbered("before", 50), [BANNER, *_numbered("after", 200)], True),
    ],
    ids=["copytruncate", "regrowing-past-the-old-offset", "same-first-bytes"],
)
async def test_copytruncate_loses_nothing(
    tmp_path: Path, log: Path, start: str, before: list[str], after: list[str], default_poll: bool
) -> None:
    log.write_text(start)
    async with Follower(log, default_poll=default_poll, synced=True) as follower:
        _write_lines(log, before)
        await follower.wait_for(before[-1])
        shutil.copy(log, tmp_path / "server.log.1")
        with open(log, "r+b") as handle:
            handle.truncate(0)
        _write_lines(log, after)
        await follower.wait_for(after[-1])
    assert follower.payload() == before + after


@pytest.mark.parametrize("directory", [False, True])
async def test_a_missing_file_or_a_directory_at_the_path_is_waited_for_and_the_wait_is_reported(
    tmp_path: Path, directory: bool
) -> None:
    log = tmp_path / "later.log"
    if directory:
        log.mkdir()
    notices: list[str] = []
    async with Follower(log, on_notice=notices.append) as follower:
        await _until(lambda: bool(notices), "a notice")
        assert "waiting for" in notices[0] and "later.log" in notices[0]
        if directory:
            log.rmdir()
        log.write_text("first\n")
        await follower.wait_for("first")
    assert follower.lines == ["first"]
    assert len(notices) == 2 and "appeared" in notices[1]


@pytest.mark.parametrize(
    ("rotations", "new_file_last"),
    [(2, True), (3, True), (3, False)],  # False: the writer has not made the next file yet
)
async def test_rotations_between_polls_lose_nothing_and_keep_file_order(
    log: Path, rotations: int, new_file_last: bool
) -> None:
    batches = [_numbered(f"file{index}", 50) for index in range(rotations + int(new_file_last))]
    async with Follower(log, default_poll=True, synced=True) as follower:
        for index, batch in enumerate(batches):
            _write_lines(log, batch)
            if index == rotations:
                break
            _rotate(log, index)
        await follower.wait_for(batches[-1][-1])
    assert follower.payload() == [line for batch in batches for line in batch]


async def test_a_rotation_inside_a_look_loses_no_file(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tailer lists the rotated files (file 1 is server.log.1), then logrotate renames before it has read
    # them: server.log.1 is now file 2, file 1 is server.log.2.
    listing, armed = tailer_module._Follower._siblings, [True]

    def listing_then_rotation(follower: tailer_module._Follower, exclude: set[tuple[int, int]]) -> Any:
        found = listing(follower, exclude)
        if armed and armed.pop():
            _rotate(log, 2)
        return found

    async with Follower(log, default_poll=True, watch=False, synced=True) as follower:
        for index in range(2):
            _write_lines(log, [f"file {index}"])
            _rotate(log, index)
        _write_lines(log, ["file 2"])
        monkeypatch.setattr(tailer_module._Follower, "_siblings", listing_then_rotation)
        await follower.wait_for("file 2")
    assert follower.payload() == ["file 0", "file 1", "file 2"]


async def test_rotated_files_written_in_one_clock_tick_are_read_oldest_first(log: Path) -> None:
    # A coarse file clock gives files written within one tick the same mtime: their numbers tell the order.
    # watch=False: one look at all of it, mostly
    async with Follower(log, default_poll=True, watch=False, synced=True) as follower:
        for index in range(3):
            _write_lines(log, [f"file {index}"])
            _rotate(log, index)
        mtime = os.stat(f"{log}.2").st_mtime_ns
        os.utime(f"{log}.1", ns=(mtime, mtime))
        await follower.wait_for("file 2")
    assert follower.payload() == ["file 0", "file 1", "file 2"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify wake-ups are Linux only")
async def test_a_rotation_wakes_the_tailer_before_its_next_poll(tmp_path: Path, log: Path) -> None:
    log.write_text("old\n")
    async with Follower(log, from_start=True) as follower:
        follower.tailer.poll_interval_s = 60.0  # longer than the wait below: only inotify can wake it
        await follower.wait_for("old")
        await asyncio.sleep(0.2)  # the first step is over and the tailer waits
        os.rename(log, tmp_path / "server.log.1")
        log.write_text("new\n")
        await follower.wait_for("new")
    assert follower.lines == ["old", "new"]


async def test_rotations_seen_one_by_one_read_each_file_once(log: Path) -> None:
    async with Follower(log, default_poll=True, synced=True) as follower:
        for index in range(3):
            _write_lines(log, [f"file {index}"])
            await follower.wait_for(f"file {index}")
            _rotate(log, index)
            log.write_text("")
        _write_lines(log, ["last"])
        await follower.wait_for("last")
        await follower.sync(log)  # a few more polls: nothing read twice
    assert follower.payload() == ["file 0", "file 1", "file 2", "last"]


async def test_other_files_named_like_the_log_are_not_read(tmp_path: Path, log: Path) -> None:
    async with Follower(log, default_poll=True, synced=True) as follower:
        _write_lines(tmp_path / "server.log.lock", ["not a log"])
        _write_lines(tmp_path / "server.log_stderr", ["not this one either"])
        _write_lines(tmp_path / "server.log.1.gz", ["compressed"])
        _write_lines(log, ["before"])
        os.rename(log, tmp_path / "server.log.1")
        _write_lines(log, ["after"])
        await follower.wait_for("after")
    assert follower.payload() == ["before", "after"]


async def test_lines_written_to_the_rotated_file_before_the_writer_reopens_are_read(
    tmp_path: Path, log: Path
) -> None:
    async with Follower(log, default_poll=True, synced=True) as follower:
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


async def test_files_rotated_while_the_path_is_empty_are_read(tmp_path: Path, log: Path) -> None:
    """A rotation storm whose writer creates the next file only later: each file is written, renamed over
    `.1` (the one before it is gone then) and the path stays empty until the next file. The tailer finds
    each rotated file while it is still at `.1`, without a new file at the path to tell it."""
    batches = [_numbered(f"file{index}", 100) for index in range(4)]
    async with Follower(log, default_poll=True, synced=True) as follower:
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
async def test_files_rotated_while_the_reader_is_busy_are_held_and_read(tmp_path: Path, log: Path) -> None:
    """A reader still busy with the lines already read (the dashboard parsing a burst of them) leaves the
    tailer no turn; the files made and renamed over meanwhile are taken hold of at once and read after."""
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
    tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a rotation storm a file read and let go is deleted and its inode number given to the next file,
    whose first bytes (the same time stamp, the same logger) can be the same: it is still a new file."""
    monkeypatch.setattr(tailer_module, "LINGER_S", 0.0)  # a drained rotated file is let go at once
    first = _numbered("first", 50)
    async with Follower(log, default_poll=True, watch=False, synced=True) as follower:
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


async def test_copytruncate_seen_by_the_first_bytes_alone(log: Path) -> None:
    """A copytruncate is seen by the first bytes' fingerprint when size and the bytes before the old offset
    say nothing: the new content is longer, and repeats the old content's last lines exactly at the old offset
    (a server that prints the same heartbeat line again and again). `tail -F` loses none of it; neither may
    we."""
    heartbeat = "INFO 05-01 14:39:05 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s"
    before = ["INFO 05-01 14:00:00 [api_server.py:1] vLLM API server version 0.11.0 (run 1)"] + [
        heartbeat
    ] * 20
    again = ["INFO 05-01 14:30:00 [api_server.py:1] vLLM API server version 0.11.0 (run 2)"] + [
        heartbeat
    ] * 20
    after = [*again, *(f"INFO after line {number:04d}" for number in range(50))]
    assert len(before[0]) == len(again[0])  # the old offset falls on the same heartbeat bytes
    async with Follower(log, default_poll=True, synced=True) as follower:
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
