"""Time from `spectop` starting to its first full frame.

Starts one simulated vLLM server (a separate process), then launches the dashboard process several
times (headless, 80x24) and measures, from process spawn: the first painted dashboard (cards, no
data yet) and the first frame showing the first scrape (status up; rates need a second scrape one
poll interval later). Interpreter start and imports count.

    .venv/bin/python tests/bench/bench_dashboard_first_frame.py [--runs 5]
Target: first frame under 1 s.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _child(url: str) -> None:
    sys.path.insert(0, str(ROOT))
    from tui.app import SpectopApp
    from tui.settings import EndpointSettings, Settings
    from tui.sources.updates import ReadingArrived, Update

    class TimedApp(SpectopApp):
        async def on_mount(self) -> None:
            await super().on_mount()
            self.call_after_refresh(lambda: print(f"PAINT {time.time()}", flush=True))

        def apply(self, update: Update) -> None:
            super().apply(update)
            if isinstance(update, ReadingArrived):
                self.call_after_refresh(self._report)

        def _report(self) -> None:
            print(f"DATA {time.time()}", flush=True)
            self.exit()

    endpoint = EndpointSettings(name="sim", url=url, backend="vllm")
    settings = Settings(poll_interval_s=1.0, endpoints=[endpoint])
    TimedApp(settings, remember_theme_choice=False).run(headless=True, size=(80, 24))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "sim.out"
        with out.open("wb") as handle:
            sim = subprocess.Popen(
                [sys.executable, "-m", "tui", "sim", "--port", "0"], stdout=handle, cwd=ROOT
            )
        try:
            url = None
            for _ in range(400):
                match = re.search(r"listening on (http://\S+)", out.read_text())
                if match:
                    url = match.group(1)
                    break
                time.sleep(0.05)
            assert url, "the simulator did not start"
            paints, datas = [], []
            for _ in range(args.runs):
                started = time.time()
                result = subprocess.run(
                    [sys.executable, __file__, "--child", url],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    timeout=60,
                )
                lines = result.stdout.splitlines()
                marks = dict(line.split() for line in lines if line.startswith(("PAINT", "DATA")))
                paints.append(float(marks["PAINT"]) - started)
                datas.append(float(marks["DATA"]) - started)
        finally:
            sim.terminate()
            sim.wait(timeout=10)
    print(f"runs: {args.runs} (process spawn → frame, headless 80x24, interpreter start + imports included)")
    for label, times in (("first painted dashboard", paints), ("first frame with a scrape", datas)):
        median = statistics.median(times)
        print(f"{label}: median {median:.3f} s (min {min(times):.3f}, max {max(times):.3f})")
    print("target: first frame under 1 s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
