"""CPU time of `LogTailer.lines()` following an idle log and a busy one (inotify and polling).
`[--seconds S] [--rate LINES_PER_S] [--module PATH]` (`--module`: another tailer.py to compare)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LINE = "(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine 000: Avg generation throughput: 1.0\n"


def _writer(path: Path, rate: float, stop: threading.Event) -> None:
    interval = 1.0 / rate
    next_at = time.monotonic()
    with open(path, "a", buffering=1) as handle:
        while not stop.is_set():
            handle.write(LINE)
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)


@contextmanager
def _writing(path: Path, rate: float) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=_writer, args=(path, rate, stop), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


async def _follow(tailer_class: Any, path: Path, seconds: float, rate: float, **options: Any) -> tuple:
    seen = 0

    async def consume() -> None:
        nonlocal seen
        async for _ in tailer_class(path, **options).lines():
            seen += 1

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)  # started and positioned
    cpu = time.process_time()
    await asyncio.sleep(seconds)
    idle_cpu = time.process_time() - cpu
    # the writer's own CPU is counted too: measure it alone below and subtract
    cpu = time.process_time()
    with _writing(path, rate):
        await asyncio.sleep(seconds)
    busy_cpu = time.process_time() - cpu
    await asyncio.sleep(0.5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return idle_cpu / seconds, busy_cpu / seconds, seen


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--seconds", type=float, default=5.0)
    arguments.add_argument("--rate", type=float, default=2000.0, help="lines/s while busy")
    arguments.add_argument("--module", help="another tailer.py to load LogTailer from")
    options = arguments.parse_args()
    if options.module:
        spec = importlib.util.spec_from_file_location("other_tailer", options.module)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        tailer_class = module.LogTailer
        modes = {"given module": {}}
    else:
        from tui.telemetry.tailer import LogTailer as tailer_class

        modes = {"inotify + polling": {"watch": True}, "polling only": {"watch": False}}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "server.log"
        path.write_text("")
        cpu = time.process_time()
        with _writing(path, options.rate):
            time.sleep(options.seconds)
        writer_cpu = (time.process_time() - cpu) / options.seconds
        print(f"writer alone: {writer_cpu * 100:.1f}% of a core at {options.rate:.0f} lines/s")
        for mode, extra in modes.items():
            path.write_text("")
            run = _follow(tailer_class, path, options.seconds, options.rate, **extra)
            idle, busy, seen = asyncio.run(run)
            print(
                f"{mode:>18}: idle {idle * 100:.2f}% of a core, busy {(busy - writer_cpu) * 100:.1f}% "
                f"(writer subtracted), {seen} lines seen"
            )


if __name__ == "__main__":
    main()
