"""`spectop --endpoint URL` on a pty (80x24) against a simulated vLLM: seconds to the painted card and
to the first frame with figures, next to `import textual.app` in the same run. `[--runs 5]`; target
first frame with figures under 0.5 s (on a busy machine compare the ratio to the baseline)."""

from __future__ import annotations

import argparse
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import ROOT, cpu_seconds, spectop_on_pty

from tui.format import LIFETIME_MARK

_ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
TIMEOUT_S = 60.0


def _launch(url: str, home: Path) -> tuple[float | None, float | None, float | None, float | None]:
    """Seconds to the painted card, to the first frame with figures, to a lifetime mark, and the CPU
    seconds the app used by its first frame with figures, of one launch."""
    started = time.perf_counter()
    process, leader = spectop_on_pty(["--endpoint", url], home, 80, 24)
    screen = b""
    painted = figures = lifetime = cpu = None
    mark = LIFETIME_MARK.encode()
    try:
        while time.perf_counter() - started < TIMEOUT_S and (figures is None or lifetime is None):
            ready, _, _ = select.select([leader], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break  # the app ended
            if not chunk:
                break
            now = time.perf_counter() - started
            screen += _ESCAPES.sub(b"", chunk)
            if painted is None and b"vllm" in screen and b"tok/s" in screen:
                painted = now
            if figures is None and b"scraped" in screen:
                figures = now
                cpu = cpu_seconds(process.pid)
            if lifetime is None and b"scraped" in screen and mark in screen:
                lifetime = now
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        os.close(leader)
    return painted, figures, lifetime, cpu


def _start_sim(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    out = folder / "sim.out"
    with out.open("wb") as handle:
        sim = subprocess.Popen(
            [sys.executable, "-m", "tui", "sim", "--port", "0", "--background-load", "2"],
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        match = re.search(r"listening on (http://\S+)", out.read_text())
        if match:
            return sim, match.group(1)
        if sim.poll() is not None:
            break
        time.sleep(0.05)
    sim.terminate()
    raise SystemExit(f"the simulator did not start: {out.read_text()[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    seen: dict[str, list[float]] = {
        name: [] for name in ("paint", "frame", "mark", "cpu", "baseline", "baseline cpu")
    }
    with tempfile.TemporaryDirectory() as folder:
        sim, url = _start_sim(Path(folder))
        try:
            time.sleep(3.0)  # the background load finishes a few requests: the lifetime counters move
            (Path(folder) / "warm-up").mkdir()
            _launch(url, Path(folder) / "warm-up")  # writes the compiled modules, as an install has them
            for run in range(args.runs):
                started, before = time.perf_counter(), os.times()
                subprocess.run([sys.executable, "-c", "import textual.app"], check=True, cwd=ROOT, timeout=60)
                seen["baseline"].append(time.perf_counter() - started)
                after = os.times()  # the children's user + system time: the import's CPU
                seen["baseline cpu"].append(sum(after[2:4]) - sum(before[2:4]))
                home = Path(folder) / f"home{run}"
                home.mkdir()
                painted, figures, lifetime, cpu = _launch(url, home)
                if painted is None or figures is None:
                    raise SystemExit(f"run {run}: no frame with figures within {TIMEOUT_S:.0f} s")
                for name, value in (("paint", painted), ("frame", figures), ("mark", lifetime), ("cpu", cpu)):
                    if value is not None:
                        seen[name].append(value)
        finally:
            sim.terminate()
            sim.wait(timeout=10)
    print(f"runs: {args.runs} (launch → frame on a pty, 80x24, `python -m tui --endpoint URL`)")
    measured = [
        ("first painted dashboard", seen["paint"]),
        ("first frame with figures", seen["frame"]),
        (f"first frame with lifetime figures ({LIFETIME_MARK})", seen["mark"]),
        ("baseline: python -c 'import textual.app'", seen["baseline"]),
    ]
    baseline = statistics.median(seen["baseline"])
    for label, times in measured:
        if not times:
            print(f"{label}: never seen")
            continue
        median = statistics.median(times)
        print(
            f"{label}: median {median:.3f} s (min {min(times):.3f}, max {max(times):.3f}; "
            f"{median / baseline:.2f}x the baseline)"
        )
    if seen["cpu"]:
        print(
            "CPU used by the first frame with figures (≈ its wall time on an idle machine): median "
            f"{statistics.median(seen['cpu']):.3f} s "
            f"(baseline {statistics.median(seen['baseline cpu']):.3f} s)"
        )
    print("target: first frame with figures under 0.5 s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
