"""Opening a 1 GB-class log in the log viewer (`l`): the tail, ten pages back and the screen's first
frame, against reading the whole file once. `[--mb 1024]`"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from textual.app import App

from tui.screens.log_viewer import LogView, LogViewerScreen
from tui.telemetry.log_window import LogWindow

LINES = (
    "(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine 000: Avg prompt throughput: 18.2 "
    "tokens/s, Avg generation throughput: 166.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs\n"
    '(APIServer pid=1) INFO:     127.0.0.1:54321 - "GET /metrics HTTP/1.1" 200 OK\n'
    "(APIServer pid=1) INFO 08-20 14:04:17 [metrics.py:98] SpecDecoding metrics: Mean acceptance "
    "length: 2.51, Accepted: 1156 tokens, Drafted: 1532 tokens, Avg Draft acceptance rate: 75.5%\n"
)


def write(path: Path, megabytes: int) -> None:
    block = (LINES * ((1 << 20) // len(LINES))).encode()
    with path.open("wb") as out:
        written = 0
        while written < megabytes << 20:
            out.write(block)
            written += len(block)


async def first_frame(path: Path) -> float:
    app: App[None] = App()
    async with app.run_test(size=(120, 36)) as pilot:
        started = time.perf_counter()
        await app.push_screen(LogViewerScreen(path, "bench"))
        while not (
            isinstance(app.screen, LogViewerScreen)
            and "lines" in str(app.screen.query_one("#log-status").render())
        ):
            await pilot.pause(0.001)
        view = app.screen.query_one(LogView)
        assert view.count
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1024)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spectop-bench-log-") as folder:
        path = Path(folder) / "server.log"
        write(path, options.mb)
        size = path.stat().st_size
        window = LogWindow(path)
        started = time.perf_counter()
        window.open()
        opened = time.perf_counter() - started
        tail_lines = len(window.lines)
        started = time.perf_counter()
        for _ in range(10):
            window.older()
        paged = (time.perf_counter() - started) / 10
        frame = asyncio.run(first_frame(path))
        small = Path(folder) / "small.log"
        small.write_text(LINES * 10)
        small_frame = asyncio.run(first_frame(small))
        started = time.perf_counter()
        with path.open("rb") as handle:
            whole_lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))
        whole = time.perf_counter() - started
        print(f"file: {size / 2**30:.2f} GiB, {whole_lines:,} lines")
        print(f"LogWindow.open (the tail, {tail_lines:,} lines): {opened * 1000:.1f} ms")
        print(f"one older page (about {len(window.lines) // 11:,} lines): {paged * 1000:.1f} ms")
        print(
            f"viewer screen, push to the tail on screen: {frame * 1000:.0f} ms "
            f"({small_frame * 1000:.0f} ms for a 30-line file)"
        )
        print(f"baseline: reading the whole file once (counting lines): {whole * 1000:.0f} ms")


if __name__ == "__main__":
    main()
