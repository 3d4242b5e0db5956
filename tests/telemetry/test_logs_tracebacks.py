# ruff: noqa: E501  (real log lines)
"""`LogParser` groups tracebacks into one event, reports OOM / dead engine at once, stays bounded."""

from __future__ import annotations

from pathlib import Path

from tui.configs.restart import last_errors
from tui.telemetry.events import ErrorEvent, LogEvent
from tui.telemetry.logs import LogParser, parse_line
from tui.telemetry.logs.dispatch import MAX_HEAD_LINES, MAX_TAIL_LINES

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
    + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 21.75 MiB is free.",
    "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed.",
    "(APIServer pid=1) INFO 05-01 14:39:07 [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%",
]


def _feed_all(lines: list[str], parser: LogParser | None = None) -> list[LogEvent]:
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
    assert [parse_line(VLLM_OOM_TRACEBACK[frame]) for frame in (2, 3, 6)] == [None] * 3
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


def test_open_traceback_is_flushed_at_end_or_closed_by_a_stats_line() -> None:
    parser = LogParser()
    assert parser.feed("Traceback (most recent call last):") == []
    assert parser.feed('  File "x.py", line 1, in f') == []
    assert parser.pending
    events = parser.flush()
    assert len(events) == 1 and events[0].category == "traceback"
    assert events[0].message == "Traceback (most recent call last):"
    assert not parser.pending
    assert parser.flush() == []
    parser.feed("Traceback (most recent call last):")
    parser.feed('  File "x.py", line 1, in f')
    parser.feed("RuntimeError: boom")
    events = parser.feed(
        "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 2, #token: 500, token usage: 0.01, accept len: 2.5, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0"
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


def test_backend_is_remembered_or_given_as_a_hint() -> None:
    parser = LogParser()
    assert parser.backend is None
    parser.feed(
        "0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = 1.00000 (   56 accepted /    56 generated), mean len =  9.00"
    )
    assert parser.backend == "llamacpp"
    events = parser.feed("RuntimeError: something broke")
    assert events[0].backend == "llamacpp"
    # a backend hint: "auto" means detect
    assert LogParser("auto").backend is None
    assert LogParser("vLLM").backend == "vllm"
    assert LogParser("llama.cpp").backend == "llamacpp"


# The end of a real vLLM 0.32 start-up that fails: a draft model path that does not exist.
FAILED_START = """Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/vllm/engine/arg_utils.py", line 2099, in create_speculative_config
    return SpeculativeConfig(**self.speculative_config)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/pydantic/_internal/_dataclasses.py", line 121, in __init__
    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)
pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig
  Value error, Invalid repository ID or local directory specified: '/models/no-such-draft'.
Please verify the following requirements:
1. Provide a valid Hugging Face repository ID.
2. Specify a local directory that contains a recognized configuration file.
   - For Hugging Face models: ensure the presence of a 'config.json'.
   - For Mistral models: ensure the presence of a 'params.json'.
 [type=value_error, input_value=ArgsKwargs((), {'model': ...config_format': 'auto'}), input_type=ArgsKwargs]
    For further information visit https://errors.pydantic.dev/2.14/v/value_error
"""


def test_a_pydantic_validation_error_keeps_what_failed(tmp_path: Path) -> None:
    """The exception line names only the model; the reason (the bad path) is the indented line after it,
    which used to pass for a frame line: the error shown was "Please verify the following requirements:"."""
    parser = LogParser()
    events = [event for line in FAILED_START.splitlines() for event in parser.feed(line)] + parser.flush()
    messages = [event.message for event in events if isinstance(event, ErrorEvent)]
    traceback = [event for event in events if isinstance(event, ErrorEvent) and event.category == "traceback"]
    assert len(traceback) == 1
    assert (
        "Invalid repository ID or local directory specified: '/models/no-such-draft'" in traceback[0].message
    )
    assert not any(message.startswith("Please verify") for message in messages)
    log = tmp_path / "server.log"
    log.write_text(FAILED_START)
    assert any("no-such-draft" in message for message in last_errors(log))


STATS_2 = "(APIServer pid=95669) INFO 07-20 18:11:49 [loggers.py:271] Engine 002: Avg prompt throughput: 0.1 tokens/s, Avg generation throughput: 43.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.1%, Prefix cache hit rate: 0.0%, External prefix cache hit rate: 100.0%"
STATS_3 = STATS_2.replace("Engine 002", "Engine 003")
SPEC = "(APIServer pid=95669) INFO 07-20 18:11:49 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.87, Accepted throughput: 9.40 tokens/s, Drafted throughput: 15.10 tokens/s, Accepted: 282 tokens, Drafted: 453 tokens, Per-position acceptance rate: 0.821, 0.609, 0.437, Avg Draft acceptance rate: 62.3%"


def _engines(lines: list[str]) -> list[tuple[str, str | None]]:
    parser = LogParser()
    return [(event.kind, getattr(event, "engine", None)) for line in lines for event in parser.feed(line)]


def test_spec_line_takes_the_engine_of_the_stats_line_just_before_it_or_none() -> None:
    stats_then_spec = [("stats", "2"), ("spec_decode", "2"), ("stats", "3"), ("spec_decode", "3")]
    assert _engines([STATS_2, SPEC, STATS_3, SPEC]) == stats_then_spec
    assert _engines([SPEC]) == [("spec_decode", None)]
    assert _engines([STATS_2, SPEC, SPEC]) == [("stats", "2"), ("spec_decode", "2"), ("spec_decode", None)]
    later = SPEC.replace("18:11:49", "18:11:59")
    assert _engines([STATS_2, later]) == [("stats", "2"), ("spec_decode", None)]
    event = parse_line(SPEC)  # stateless: no guess
    assert event is not None and event.kind == "spec_decode" and event.engine is None
