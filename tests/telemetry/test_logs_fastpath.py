# ruff: noqa: E501  (log lines)
"""The one-regex fast paths give exactly the events of the generic grammars and decline every variant
they do not know."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tui.telemetry.events import SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import fastpath, sglang, vllm

SAMPLES = Path(__file__).parent / "log_samples"


def _generated_lines(count: int) -> list[str]:
    rng = random.Random(7)
    lines = []
    for _ in range(count):
        proc = rng.choice(["(APIServer pid=1) ", "", "(APIServer pid=95669) "])
        level = rng.choice(["INFO", "DEBUG"])
        k = rng.randrange(1, 16)
        positions = ", ".join(f"{rng.random():.3f}" for _ in range(k))
        mean = 1 + sum(float(p) for p in positions.split(", "))
        lines.append(
            f"{proc}{level} 08-20 14:04:{rng.randrange(60):02d} [metrics.py:{rng.randrange(999)}] SpecDecoding "
            f"metrics: Mean acceptance length: {mean:.2f}, Accepted throughput: {rng.uniform(0, 900):.2f} tokens/s, "
            f"Drafted throughput: {rng.uniform(0, 900):.2f} tokens/s, Accepted: {rng.randrange(9999)} tokens, "
            f"Drafted: {rng.randrange(1, 9999)} tokens, Per-position acceptance rate: {positions}, "
            f"Avg Draft acceptance rate: {rng.uniform(0, 100):.1f}%"
        )
        lines.append(
            f"{proc}{level} 08-20 14:04:{rng.randrange(60):02d} [loggers.py:{rng.randrange(999)}] Engine "
            f"{rng.randrange(8):03d}: Avg prompt throughput: {rng.uniform(0, 9e3):.1f} tokens/s, Avg generation "
            f"throughput: {rng.uniform(0, 9e3):.1f} tokens/s, Running: {rng.randrange(99)} reqs, Waiting: "
            f"{rng.randrange(99)} reqs, GPU KV cache usage: {rng.uniform(0, 100):.1f}%, Prefix cache hit rate: "
            f"{rng.uniform(0, 100):.1f}%"
        )
        prefix = rng.choice(["", " TP0", " DP1 TP1", " TP3 EP3"])
        ms = rng.choice(["", ".123", ".007"])
        spec = rng.choice(
            ["", f"accept len: {rng.uniform(1, 5):.2f}, accept rate: {rng.uniform(0, 1.3):.2f}, "]
        )  # >1: b6fb5d766
        graph = rng.choice(["cuda graph", "cpu graph", "npu graph"])
        lines.append(
            f"[2026-07-20 09:50:{rng.randrange(60):02d}{ms}{prefix}] Decode batch, #running-req: {rng.randrange(99)}, "
            f"#token: {rng.randrange(10**6)}, token usage: {rng.random():.2f}, {spec}{graph}: "
            f"{rng.choice(['True', 'False'])}, gen throughput (token/s): {rng.uniform(0, 9e3):.2f}, #queue-req: "
            f"{rng.randrange(9)}"
        )
        lines.append(
            f"[2026-07-20 09:50:{rng.randrange(60):02d}{ms}{prefix}] Prefill batch, #new-seq: {rng.randrange(1, 9)}, "
            f"#new-token: {rng.randrange(10**5)}, #cached-token: {rng.choice([0, rng.randrange(10**5)])}, token "
            f"usage: {rng.random():.2f}, #running-req: {rng.randrange(99)}, #queue-req: {rng.randrange(9)}, "
            f"#pending-token: {rng.randrange(9999)}, {graph}: False, input throughput (token/s): "
            f"{rng.uniform(0, 9e3):.2f}"
        )
    return lines


def _generic(line: str) -> list[StatsEvent | SpecDecodeEvent]:
    for marker in vllm.SPEC_MARKERS:
        start = line.find(marker)
        if start >= 0:
            event = vllm.parse_spec(line, start, marker)
            return [event] if event else []
    start = line.find(vllm.STATS_MARKER)
    if start >= 0:
        stats = vllm.parse_stats(line, start)
        return [stats] if stats else []
    found = sglang.find_batch(line)
    return sglang.parse_batch(line, found) if found else []


def _fast(line: str) -> list[StatsEvent | SpecDecodeEvent] | None:
    if "SpecDecoding" in line:
        event = fastpath.vllm_spec(line)
        return [event] if event else None
    if "Avg prompt" in line:
        stats = fastpath.vllm_stats(line)
        return [stats] if stats else None
    if "Decode batch" in line:
        return fastpath.sglang_decode(line)
    return fastpath.sglang_prefill(line)


def test_fast_and_generic_paths_agree() -> None:
    sample_lines = [
        line
        for name in ("vllm", "sglang")
        for line in (SAMPLES / f"{name}.server.log").read_text().splitlines()
        if " batch, " in line or "metrics: " in line or "Avg prompt" in line
    ]
    cpu_build = (  # vLLM's CPU build names its KV device (samples/vllm-cpu-real)
        "(APIServer pid=24700) INFO 12-01 19:30:19 [loggers.py:335] Engine 000: Avg prompt throughput: 3.1 "
        "tokens/s, Avg generation throughput: 14.8 tokens/s, Running: 1 reqs, Waiting: 0 reqs, CPU KV cache "
        "usage: 0.7%, Prefix cache hit rate: 0.0%"
    )
    lines = [*sample_lines, cpu_build, *_generated_lines(300)]
    taken = 0
    for line in lines:
        fast = _fast(line)
        if fast is None:
            continue
        taken += 1
        assert [event.model_dump() for event in fast] == [event.model_dump() for event in _generic(line)], (
            line
        )
    assert taken == len(lines)  # every one of these current-format lines takes the fast path


@pytest.mark.parametrize(
    "line",
    [
        # an optional segment, the old mean-length convention, a trailing comma, a prefix with a period
        "(APIServer pid=1) INFO 08-20 14:05:00 [loggers.py:310] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        "Avg generation throughput: 2.0 tokens/s, Running: 4 reqs, Waiting: 6 reqs, Preemptions: 3, GPU KV cache "
        "usage: 50.0%, Prefix cache hit rate: 25.0%",
        "INFO 04-30 10:00:00 [metrics.py:80] SpecDecoding metrics: Mean acceptance length: 1.40, Accepted "
        "throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: 140 tokens, Drafted: 200 tokens, "
        "Per-position acceptance rate: 0.800, 0.600, Avg Draft acceptance rate: 70.0%",
        "[2025-10-22 08:00:00 TP0] Decode batch. #running-req: 1, #token: 108, token usage: 0.00, accept len: "
        "2.17, accept rate: 0.54, cuda graph: True, gen throughput (token/s): 0.39, #queue-req: 0, ",
        "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 2, #full token: 500, full token usage: 0.01, "
        "mamba num: 1, mamba usage: 0.1, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
        "[2026-02-01 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 100, #cached-token: 0, token usage: "
        "0.01, #running-req: 0, #queue-req: 0, input throughput (token/s): 100.00, cuda graph: False",
    ],
)
def test_fast_paths_decline_other_variants(line: str) -> None:
    assert _fast(line) is None
    assert _generic(line)


def test_sglang_batch_dispatch_agrees_with_find_batch() -> None:
    """`sglang_batch` skips `find_batch`; on every line it takes, `find_batch` names the same phase."""
    sample_lines = (SAMPLES / "sglang.server.log").read_text().splitlines()
    tricky = [
        "[2026-07-20 09:50:00 TP0] Prefill batch, #new-seq: 1, Decode batch, #running-req: 1",
        "[2026-07-20 09:50:00 TP0] Decode batch [12], #running-req: 1, #token: 2, token usage: 0.01, cuda "
        "graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
    ]
    lines = sample_lines + _generated_lines(200) + tricky
    taken = 0
    for line in lines:
        fast = fastpath.sglang_batch(line)
        if fast is None:
            continue
        taken += 1
        found = sglang.find_batch(line)
        assert found is not None, line
        expected = fastpath.sglang_decode(line) if found[0] == "decode" else fastpath.sglang_prefill(line)
        assert expected is not None, line
        assert [event.model_dump() for event in fast] == [event.model_dump() for event in expected], line
    assert taken >= 400  # every generated Decode and Prefill line
