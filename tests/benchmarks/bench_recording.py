# ruff: noqa: E501  (real log lines)
"""Log events per second through `RecordingWriter` (what `--record` costs) and bytes per event.
`[--events N] [--max-mb MB]`; target > 100,000 events/s."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from tui.telemetry.figures import Figures
from tui.telemetry.logs import LogParser
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import RecordedEndpoint, RecordingWriter

URL = "http://127.0.0.1:9"
LINES = [
    "(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine 000: Avg prompt throughput: 120.5 tokens/s, "
    "Avg generation throughput: 277.9 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.7%, "
    "Prefix cache hit rate: 34.6%",
    "(APIServer pid=1) INFO 08-20 14:04:17 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.42, "
    "Accepted throughput: 39.17 tokens/s, Drafted throughput: 55.20 tokens/s, Accepted: 1629 tokens, Drafted: "
    "2296 tokens, Per-position acceptance rate: 0.807, 0.612, Avg Draft acceptance rate: 70.9%",
]


async def _run(path: Path, count: int, max_mb: float | None) -> float:
    parser = LogParser("vllm")
    events = [event for line in LINES for event in parser.feed(line)]
    options = {} if max_mb is None else {"max_bytes": int(max_mb * 1024 * 1024)}
    writer = RecordingWriter(path, **options)
    figures = Figures(generation_tokens_per_s=277.9, acceptance_rate=0.709)
    reading = EndpointReading(
        name="a", url=URL, time=0.0, up=True, backend="vllm", model="m", window_s=60.0, figures=figures
    )
    started = time.perf_counter()
    await writer.open([RecordedEndpoint(name="a", url=URL)], now=0.0)
    for number in range(count):
        await writer.write_log_event("a", float(number), events[number % len(events)])
        if number % 100 == 0:
            await writer.write_reading(reading.model_copy(update={"time": float(number)}))
    await writer.close()
    return time.perf_counter() - started


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--events", type=int, default=100_000)
    arguments.add_argument("--max-mb", type=float, default=None, help="size cap")
    options = arguments.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recording.jsonl"
        elapsed = asyncio.run(_run(path, options.events, options.max_mb))
        files = sorted(Path(folder).iterdir())
        total = sum(file.stat().st_size for file in files)
        print(
            f"{options.events:,} events in {elapsed:.2f} s: {options.events / elapsed:,.0f} events/s; "
            f"{total / options.events:.0f} bytes/event; files: "
            + ", ".join(f"{file.name} {file.stat().st_size / 1e6:.1f} MB" for file in files)
        )


if __name__ == "__main__":
    main()
