"""copytruncate beside a writer not in append mode: the writer's next line lands at its old offset,
after a hole of NUL bytes; the first line after the hole must be read, as `tail -F` shows it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from test_tailer import Follower

from tui.telemetry.tailer import LineSplitter


async def test_the_first_line_after_a_nul_hole_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
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


def test_the_splitter_drops_nul_runs() -> None:
    splitter = LineSplitter(max_line_bytes=64)
    assert splitter.feed(b"\0" * 1000) == []
    assert splitter.feed(b"\0" * 1000 + b"line\n") == ["line"]
