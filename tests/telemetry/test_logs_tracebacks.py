# ruff: noqa: E501  (real log lines)
"""`LogParser` groups multi-line tracebacks into one `traceback` event, reports the specific failure
(OOM, dead engine) from the exception line at once, and keeps everything bounded."""

from __future__ import annotations

from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import LogParser, parse_line
from tui.telemetry.logs.tracebacks import MAX_HEAD_LINES, MAX_TAIL_LINES

VLLM_PREFIX = "(EngineCore pid=112) ERROR 05-01 14:39:06 [core.py:1131] "
VLLM_OOM_TRACEBACK = [
    "(EngineCore pid=112) ERROR 05-01 14:39:06 [core.py:1122] EngineCore encountered a fatal error.\r",
    VLLM_PREFIX + "Traceback (most recent call last):\r",
    VLLM_PREFIX
    + '  File "/usr/lib/python3/site-packages/vllm/v1/engine/core.py", line 1120, in run_engine_core\r',
    VLLM_PREFIX + "    engine_core.run_busy_loop()\r",
    VLLM_PREFIX
    + '  File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1773, in _call_impl\r',
    VLLM_PREFIX + "    return forward_call(*args, **kwargs)\r",
    VLLM_PREFIX + "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\r",
    VLLM_PREFIX
    + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total "
    "capacity of 23.56 GiB of which 21.75 MiB is free.",
    "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed.",
    "(APIServer pid=1) INFO 05-01 14:39:07 [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
    "Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, "
    "Prefix cache hit rate: 0.0%",
]


def _feed_all(
    lines: list[str], parser: LogParser | None = None
) -> list[StatsEvent | SpecDecodeEvent | ErrorEvent]:
    parser = parser or LogParser()
    events = []
    for line in lines:
        events.extend(parser.feed(line))
    events.extend(parser.flush())
    return events


def test_vllm_oom_traceback_is_one_traceback_event_plus_the_specific_errors() -> None:
    events = _feed_all(VLLM_OOM_TRACEBACK)
    kinds = [(e.kind, getattr(e, "category", None)) for e in events]
    assert kinds == [
        ("error", "engine_dead"),  # EngineCore encountered a fatal error.
        ("error", "oom"),  # the exception line, reported as soon as it is read
        ("error", "traceback"),  # closed by the APIServer line
        ("error", "engine_dead"),  # AsyncLLM output_handler failed.
        ("stats", None),
    ]
    traceback = events[2]
    assert isinstance(traceback, ErrorEvent)
    assert traceback.message.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert traceback.time == "05-01 14:39:06"
    assert traceback.backend == "vllm"
    assert traceback.line.count("\n") == 6  # 7 lines: Traceback ... exception
    assert "run_busy_loop" in traceback.line


def test_stateless_parse_line_skips_frame_lines_and_flags_the_start() -> None:
    assert parse_line(VLLM_OOM_TRACEBACK[2]) is None
    assert parse_line(VLLM_OOM_TRACEBACK[3]) is None
    assert parse_line(VLLM_OOM_TRACEBACK[6]) is None
    start = parse_line(VLLM_OOM_TRACEBACK[1])
    assert start is not None and start.kind == "error" and start.category == "traceback"


def test_sglang_scheduler_traceback_without_prefixes() -> None:
    lines = [
        "[2026-07-20 09:50:11 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 4640, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/sgl/python/sglang/srt/mem_cache/allocation.py", line 240, in alloc',
        "    raise RuntimeError(msg)",
        "RuntimeError: Prefill out of memory. Try to lower your batch size.",
        "Try to allocate 8192 tokens.",
        "",
        "[2026-07-20 09:50:12] Received sigquit from a child process. It usually means the child failed.",
    ]
    events = _feed_all(lines)
    categories = [e.category for e in events if isinstance(e, ErrorEvent)]
    assert categories == ["engine_dead", "oom", "traceback", "engine_dead"]
    traceback = events[2]
    assert isinstance(traceback, ErrorEvent)
    assert traceback.message == "RuntimeError: Prefill out of memory. Try to lower your batch size."
    assert "Try to allocate 8192 tokens." in traceback.line
    assert traceback.time == "2026-07-20T09:50:11"
    assert traceback.backend == "sglang"


def test_chained_plain_python_traceback_is_one_event() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in <module>',
        "    f()",
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "a.py", line 3, in <module>',
        "    g()",
        "ValueError: Unknown speculative algorithm name: MTP",
        "[2026-07-20 09:12:05] Init torch distributed begin.",
    ]
    events = _feed_all(lines, LogParser("sglang"))
    assert [e.category for e in events if isinstance(e, ErrorEvent)] == ["spec_config", "traceback"]
    assert events[-1].message == "ValueError: Unknown speculative algorithm name: MTP"
    assert events[-1].backend == "sglang"  # from the hint: the lines themselves do not say


def test_open_traceback_is_flushed_at_end() -> None:
    parser = LogParser()
    assert parser.feed("Traceback (most recent call last):") == []
    assert parser.feed('  File "x.py", line 1, in f') == []
    assert parser.pending
    events = parser.flush()
    assert len(events) == 1 and events[0].category == "traceback"
    assert events[0].message == "Traceback (most recent call last):"
    assert not parser.pending
    assert parser.flush() == []


def test_stats_line_closes_a_traceback() -> None:
    parser = LogParser()
    parser.feed("Traceback (most recent call last):")
    parser.feed('  File "x.py", line 1, in f')
    parser.feed("RuntimeError: boom")
    events = parser.feed(
        "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 2, #token: 500, token usage: 0.01, accept len: 2.5, "
        "cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0"
    )
    assert [e.kind for e in events] == ["error", "stats", "spec_decode"]
    assert events[0].message == "RuntimeError: boom"


def test_huge_traceback_stays_bounded() -> None:
    parser = LogParser()
    parser.feed("Traceback (most recent call last):")
    for number in range(50_000):
        parser.feed(f'  File "deep.py", line {number}, in recurse')
    parser.feed("RecursionError: maximum recursion depth exceeded")
    events = parser.flush() + parser.feed("x")
    traceback = next(e for e in events if e.category == "traceback")
    assert traceback.line.count("\n") <= MAX_HEAD_LINES + MAX_TAIL_LINES + 1
    assert "lines omitted" in traceback.line


def test_backend_is_remembered() -> None:
    parser = LogParser()
    assert parser.backend is None
    parser.feed(
        "0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = 1.00000 (   56 accepted /    56 "
        "generated), mean len =  9.00"
    )
    assert parser.backend == "llamacpp"
    events = parser.feed("RuntimeError: something broke")
    assert events[0].backend == "llamacpp"


def test_backend_hint_auto_means_detect() -> None:
    assert LogParser("auto").backend is None
    assert LogParser("vLLM").backend == "vllm"
    assert LogParser("llama.cpp").backend == "llamacpp"
