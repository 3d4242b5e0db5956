"""Lines lost in a rotation storm under CPU load: `spectop logs --follow --json` beside `tail -F`.
`--scheme` numbered (logrotate's order), overwrite or unique; `[--busy N] [--rounds R] [--create]`."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BUSY = "while True: pass"
THROUGHPUT = re.compile(r"prompt throughput: ([0-9.]+)|\"prompt_tokens_per_s\":([0-9.]+)")


def _line(file: int, number: int) -> str:
    """A vLLM stats line: within one second every file starts with the same bytes, as real logs do."""
    return (
        "(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine 000: Avg prompt throughput: "
        f"{file}.{number:02d} tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 1 reqs\n"
    )


def _storm(folder: Path, options: argparse.Namespace) -> None:
    log = folder / "server.log"
    for file in range(options.renames + 1):
        with open(log, "a") as handle:
            for number in range(options.lines):
                handle.write(_line(file, number))
                handle.flush()
        if file == options.renames:
            break
        if options.scheme == "numbered":
            (folder / f"server.log.{options.keep}").unlink(missing_ok=True)
            for number in range(options.keep - 1, 0, -1):
                if (folder / f"server.log.{number}").exists():
                    os.rename(folder / f"server.log.{number}", folder / f"server.log.{number + 1}")
            os.rename(log, folder / "server.log.1")
        else:
            os.rename(log, folder / f"server.log.{1 if options.scheme == 'overwrite' else file + 1}")
        if options.create:
            log.touch()
        time.sleep(options.interval)


def _key(line: str) -> int | None:
    """Which line this is (or the event of it): its prompt throughput figure, FILE.NN, as FILE * 100 + NN."""
    found = THROUGHPUT.search(line)
    return None if found is None else round(float(found.group(1) or found.group(2)) * 100)


class _Reader:
    """A follower process; its stdout lines are collected by a thread."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1
        )
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def seen(self) -> set[int | None]:
        return {_key(line) for line in list(self.lines)}

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()
        self.thread.join()


def _round(options: argparse.Namespace) -> tuple[int, int, int]:
    folder = Path(tempfile.mkdtemp(prefix="spectop-rotation-"))
    try:
        log = folder / "server.log"
        log.write_text("")
        readers = {
            "spectop": _Reader([sys.executable, "-m", "tui", "logs", "--follow", "--json", str(log)]),
            "tail -F": _Reader(["tail", "-n", "+1", "-F", str(log)]),
        }
        for number in range(300):  # both are following before the storm starts (spectop from the end)
            if all(reader.lines for reader in readers.values()):
                break
            with open(log, "a") as handle:
                handle.write(_line(999, number % 100))
            time.sleep(0.2)
        else:
            raise SystemExit("a follower never started")
        busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(options.busy)]
        try:
            time.sleep(0.5)
            _storm(folder, options)
            last = _key(_line(options.renames, options.lines - 1))
            for reader in readers.values():
                deadline = time.monotonic() + options.settle
                while last not in reader.seen() and time.monotonic() <= deadline:
                    time.sleep(0.05)
            time.sleep(1.0)  # late lines (from rotated files) still arrive
        finally:
            for process in busy:
                process.kill()
                process.wait()
        expected = {
            file * 100 + number for file in range(options.renames + 1) for number in range(options.lines)
        }
        lost = []
        for reader in readers.values():
            reader.stop()
            lost.append(len(expected - reader.seen()))
        return len(expected), lost[0], lost[1]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--renames", type=int, default=20)
    arguments.add_argument("--lines", type=int, default=100, help="lines per file (at most 100)")
    arguments.add_argument("--interval", type=float, default=0.05, help="seconds between renames")
    arguments.add_argument("--scheme", choices=("numbered", "overwrite", "unique"), default="numbered")
    create = "make the next file right after each rename (logrotate's create)"
    arguments.add_argument("--create", action="store_true", help=create)
    arguments.add_argument("--keep", type=int, default=5, help="rotated files kept (numbered)")
    arguments.add_argument("--busy", type=int, default=2 * (os.cpu_count() or 1), help="busy-loop processes")
    arguments.add_argument("--rounds", type=int, default=3)
    arguments.add_argument("--settle", type=float, default=10.0, help="seconds to wait for the last line")
    options = arguments.parse_args()
    if shutil.which("tail") is None:
        raise SystemExit("needs `tail` (coreutils)")
    print(
        f"{options.renames} renames ({options.scheme}) {options.interval * 1000:.0f} ms apart, "
        f"{options.lines} lines a file, {options.busy} busy loops"
    )
    totals = [0, 0]
    for number in range(options.rounds):
        written, spectop, tail = _round(options)
        totals[0] += spectop
        totals[1] += tail
        print(f"round {number + 1}: {written} lines written; lost: spectop {spectop}, tail -F {tail}")
    print(f"lost in {options.rounds} rounds: spectop {totals[0]}, tail -F {totals[1]}")


if __name__ == "__main__":
    main()
