# ruff: noqa: E501  (log line templates)
"""Log lines per second through `LogParser` (from disk, in memory with and without the fast paths, through
`LogTailer`, and `spectop logs --json` end to end) on a generated 1,000,000-line mixed log, next to
`grep -c`. `[--lines N]`; target > 300,000 lines/s through the parser."""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from unittest.mock import patch

from tui.telemetry.logs import LogParser, fastpath
from tui.telemetry.tailer import LogTailer

# One of each line kind. The "dense" mix cycles through these as they are (6 of 20 lines carry figures);
# the "typical" mix repeats them by TYPICAL_COUNTS, closer to a busy server's log, where access lines
# and per-request timing lines outnumber the periodic stats lines.
TEMPLATES = [
    # vLLM
    "(APIServer pid=1) INFO 08-20 14:{m:02d}:{s:02d} [loggers.py:310] Engine 000: Avg prompt throughput: {f1} "
    "tokens/s, Avg generation throughput: {f2} tokens/s, Running: {i1} reqs, Waiting: {i2} reqs, GPU KV cache "
    "usage: {p1}%, Prefix cache hit rate: {p2}%",
    "(APIServer pid=1) INFO 08-20 14:{m:02d}:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance "
    "length: 2.{i3:02d}, Accepted throughput: {f1} tokens/s, Drafted throughput: {f2} tokens/s, Accepted: {i4} "
    "tokens, Drafted: {i5} tokens, Per-position acceptance rate: 0.{i3:03d}, 0.{i1:03d}, Avg Draft acceptance "
    "rate: {p1}%",
    '(APIServer pid=1) INFO:     10.0.3.{i1}:{i4} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '(APIServer pid=1) INFO:     10.0.3.{i2}:{i5} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '(APIServer pid=1) INFO:     10.0.9.4:{i4} - "GET /metrics HTTP/1.1" 200 OK',
    "(EngineCore pid=243) INFO 08-20 14:{m:02d}:{s:02d} [gpu_model_runner.py:5520] Model loading took 14.62 GiB "
    "memory and 14.081377 seconds",
    "(APIServer pid=1) WARNING 08-20 14:{m:02d}:{s:02d} [protocol.py:112] The following fields were present in "
    "the request but ignored: {{'foo'}}",
    # SGLang
    "[2026-07-20 09:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {i1}, #token: {i4}, token usage: 0.{i3:02d}, "
    "accept len: 2.{i3:02d}, accept rate: 0.{i2:02d}, cuda graph: True, gen throughput (token/s): {f2}, "
    "#queue-req: {i2}",
    "[2026-07-20 09:{m:02d}:{s:02d} TP0] Prefill batch, #new-seq: 1, #new-token: {i4}, #cached-token: {i5}, token "
    "usage: 0.{i3:02d}, #running-req: {i1}, #queue-req: 0, #pending-token: 0, cuda graph: False, input "
    "throughput (token/s): {f1}",
    '[2026-07-20 09:{m:02d}:{s:02d}] INFO:     10.0.3.17:{i4} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '[2026-07-20 09:{m:02d}:{s:02d}] INFO:     10.0.9.4:{i5} - "GET /metrics HTTP/1.1" 200 OK',
    "[2026-07-20 09:{m:02d}:{s:02d} TP0] Load weight end. elapsed=118.42 s, type=DeepseekV3ForCausalLM, quant=fp8, "
    "fmt=e4m3, avail mem=52.31 GB, mem usage=85.85 GB.",
    # llama.cpp
    "{m}.{s:02d}.{i4:03d}.930 I slot print_timing: id  0 | task {i4} | prompt eval time =      22.33 ms /   {i1} tokens "
    "(    0.20 ms per token,  5015.00 tokens per second)",
    "{m}.{s:02d}.{i4:03d}.948 I slot print_timing: id  0 | task {i4} |        eval time =      53.50 ms /    64 tokens "
    "(    0.85 ms per token,  1177.53 tokens per second)",
    "{m}.{s:02d}.{i4:03d}.949 I slot print_timing: id  0 | task {i4} |       total time =      75.84 ms /   176 tokens",
    "{m}.{s:02d}.{i4:03d}.957 I slot print_timing: id  0 | task {i4} |    graphs reused =          7",
    "{m}.{s:02d}.{i4:03d}.963 I slot print_timing: id  0 | task {i4} | draft acceptance = 0.{i5:05d} (   {i1} accepted "
    "/    {i4} generated), mean len =  3.{i3:02d}",
    "{m}.{s:02d}.{i4:03d}.465 I slot      release: id  1 | task {i4} | stop processing: n_tokens = 175, truncated = 0",
    "{m}.{s:02d}.{i4:03d}.047 I slot get_availabl: id  1 | task -1 | selected slot by LCP similarity, f_sim_best = "
    "0.250 (> 0.100 thold), f_keep = 0.011",
    # noise
    "Loading safetensors checkpoint shards:  {i2}% Completed | {i1}/163 [00:{s:02d}<00:{m:02d},  3.21it/s]",
]
TYPICAL_COUNTS = [1, 1, 12, 12, 2, 1, 1, 1, 2, 6, 2, 1, 2, 2, 2, 2, 2, 2, 2, 1]
TYPICAL_BLOCK = [
    template for template, count in zip(TEMPLATES, TYPICAL_COUNTS, strict=True) for _ in range(count)
]
TRACEBACK = [
    "(EngineCore pid=243) ERROR 08-20 14:{m:02d}:{s:02d} [core.py:1131] Traceback (most recent call last):",
    '(EngineCore pid=243) ERROR 08-20 14:{m:02d}:{s:02d} [core.py:1131]   File "core.py", line 1120, in run',
    "(EngineCore pid=243) ERROR 08-20 14:{m:02d}:{s:02d} [core.py:1131]     engine_core.run_busy_loop()",
    "(EngineCore pid=243) ERROR 08-20 14:{m:02d}:{s:02d} [core.py:1131] torch.OutOfMemoryError: CUDA out of "
    "memory. Tried to allocate 50.00 MiB.",
]


def generate(path: Path, total_lines: int, templates: list[str]) -> None:
    rng = random.Random(20260720)
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < total_lines:
            block = TRACEBACK if rng.random() < 0.001 else templates
            values = {
                "m": rng.randrange(60),
                "s": rng.randrange(60),
                "f1": f"{rng.uniform(0, 3000):.1f}",
                "f2": f"{rng.uniform(0, 3000):.2f}",
                "i1": rng.randrange(1, 99),
                "i2": rng.randrange(0, 99),
                "i3": rng.randrange(0, 99),
                "i4": rng.randrange(100, 999),
                "i5": rng.randrange(1000, 9999),
                "p1": f"{rng.uniform(0, 100):.1f}",
                "p2": f"{rng.uniform(0, 100):.1f}",
            }
            lines = [template.format(**values) for template in block][: total_lines - written]
            handle.write("\n".join(lines) + "\n")
            written += len(lines)


def _child(argv: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (from the children's rusage) of a command, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result.stdout


def time_grep(path: Path) -> tuple[float, float, int]:
    grep = shutil.which("grep")
    if grep is None:
        return float("nan"), float("nan"), 0
    wall, cpu, out = _child([grep, "-c", "SpecDecoding metrics", str(path)])
    return wall, cpu, int(out.strip() or 0)


def _timed(run: Callable[[], tuple[int, int]]) -> tuple[float, float, int, int]:
    """Wall and CPU seconds of `run`, and the (lines, events) it counted."""
    start, start_cpu = time.perf_counter(), time.process_time()
    lines, events = run()
    return time.perf_counter() - start, time.process_time() - start_cpu, lines, events


def _count(lines: Iterable[str]) -> tuple[int, int]:
    """The lines and the events `LogParser` makes of them."""
    parser = LogParser()
    events = [len(parser.feed(line)) for line in lines]
    return len(events), sum(events) + len(parser.flush())


def _parse_file(path: Path) -> tuple[int, int]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return _count(handle)


def _general_grammars_only() -> Any:
    """Every fast path declines, as it does for a line format it does not know."""
    return patch.multiple(
        fastpath, **dict.fromkeys(("vllm_stats", "vllm_spec", "sglang_batch"), lambda line: None)
    )


def _feed_cpu(lines: list[str]) -> tuple[float, int]:
    parser = LogParser()
    start = time.process_time()
    events = sum(len(parser.feed(line)) for line in lines) + len(parser.flush())
    return time.process_time() - start, events


def time_fast_paths(path: Path) -> tuple[float, float, int]:
    """Best CPU seconds through `LogParser.feed` with and without the fast paths (alternated, 3 each)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    with_fast = without_fast = float("inf")
    for _ in range(3):
        with_fast = min(with_fast, _feed_cpu(lines)[0])
        with _general_grammars_only():
            without_fast = min(without_fast, _feed_cpu(lines)[0])
    return with_fast, without_fast, len(lines)


async def _tailer_run(path: Path) -> tuple[int, int]:
    return _count([line async for line in LogTailer(path).read_all()])


def _row(name: str, lines: int, wall: float, cpu: float, note: str) -> None:
    print(f"  {name:<34} {lines / wall:>11,.0f} lines/s wall {lines / cpu:>11,.0f} lines/s CPU  {note}")


def run_mix(folder: Path, name: str, templates: list[str], total: int, with_command: bool) -> None:
    path = folder / f"{name}.log"
    generate(path, total, templates)
    parsed_share = sum(1 for t in templates if any(m in t for m in MARKERS)) / len(templates)
    print(
        f"{name} mix: {total:,} lines, {path.stat().st_size / 1e6:.1f} MB, "
        f"{parsed_share:.0%} of lines carry figures"
    )
    wall, cpu, matches = time_grep(path)
    _row("grep -c 'SpecDecoding metrics'", total, wall, max(cpu, 1e-6), f"({matches:,} matches)")
    wall, cpu, lines, events = _timed(lambda: _parse_file(path))
    _row("LogParser.feed", lines, wall, cpu, f"({events:,} events)")
    with_fast, without_fast, lines = time_fast_paths(path)
    print(
        f"  {'LogParser.feed, fast paths on/off':<34} {lines / with_fast:>11,.0f} / {lines / without_fast:,.0f} "
        f"lines/s CPU, best of 3: fast paths {without_fast / with_fast - 1:+.0%}"
    )
    wall, cpu, lines, events = _timed(lambda: asyncio.run(_tailer_run(path)))
    _row("LogTailer.read_all + LogParser", lines, wall, cpu, f"({events:,} events)")
    if with_command:
        wall, cpu, printed = _child([sys.executable, "-m", "tui", "logs", str(path), "--json"])
        _row(
            "spectop logs --json (end to end)",
            total,
            wall,
            cpu,
            f"({len(printed.splitlines()):,} JSON lines)",
        )
    path.unlink()


MARKERS = ("Avg prompt", "SpecDecoding", " batch,", "draft acceptance")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--lines", type=int, default=1_000_000)
    args = options.parse_args()
    print("CPU = process time (this machine may be shared; wall time then understates the parser)")
    with tempfile.TemporaryDirectory(prefix="spectop-bench-") as folder:
        run_mix(Path(folder), "typical", TYPICAL_BLOCK, args.lines, with_command=True)
        run_mix(Path(folder), "dense", TEMPLATES, args.lines, with_command=False)
    print("target: > 300,000 lines/s through the parser")


if __name__ == "__main__":
    main()
