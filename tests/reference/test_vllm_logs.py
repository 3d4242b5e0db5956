# ruff: noqa: E501  (log lines are kept whole)
"""vLLM log variants of reference vllm.md §2 not covered line by line in tests/telemetry: process prefixes,
multi-line records, and lines that must give no event. Lines are the reference's own, or built from the
format strings it quotes (marked so)."""

from __future__ import annotations

import pytest

from tui.telemetry.events import ErrorEvent, StatsEvent
from tui.telemetry.logs import LogParser, parse_events

STATS_BODY = (
    "Engine 000: Avg prompt throughput: 387.9 tokens/s, Avg generation throughput: 277.9 tokens/s, "
    "Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.7%, Prefix cache hit rate: 34.6%"
)


@pytest.mark.parametrize(
    "prefix",
    [
        "(APIServer pid=1) ",
        "(EngineCore pid=243) ",
        "(EngineCore_DP0 pid=243) ",  # DP > 1, and the non-DP name before #36822
        "(EngineCore_DP3 pid=7) ",
        "(Worker pid=9) ",
        "(Worker_TP1 pid=9) ",
        "(Worker_DP1_TP3 pid=9) ",
        "(Worker_PP1_TP0 pid=9) ",
        # `_FORMAT = f"{VLLM_LOGGING_PREFIX}%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s"`
        # and decorate_logs puts `(APIServer pid=N) ` in front of every physical line (§2.1), so a set
        # VLLM_LOGGING_PREFIX sits between the two: the time, level and file:line are still read.
        "(APIServer pid=1) [vllm] ",
        "(APIServer pid=1) node-3 ",
        "(APIServer pid=1) vllm | ",
    ],
)
def test_every_process_prefix_of_decorate_logs_and_a_custom_logging_prefix(prefix: str) -> None:
    (event,) = parse_events(f"{prefix}INFO 08-20 14:04:17 [loggers.py:310] {STATS_BODY}")
    assert isinstance(event, StatsEvent)
    assert (event.time, event.engine, event.backend) == ("08-20 14:04:17", "0", "vllm")
    assert (event.generation_tokens_per_s, event.running, event.kv_cache_usage) == (277.9, 2.0, 0.007)
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB."
    (error,) = parse_events(f"{prefix}ERROR 05-01 14:39:06 [core.py:1131] {oom}")
    assert isinstance(error, ErrorEvent)
    assert (error.category, error.time, error.message) == ("oom", "05-01 14:39:06", oom)
    # A WARNING record is never an error (samples/vllm/server.log line 12).
    warning = (
        f"{prefix}WARNING 08-20 14:02:14 [speculative.py:975] Enabling num_speculative_tokens > 1 "
        "will run multiple times of forward on same MTP layer,which may result in lower acceptance rate"
    )
    assert parse_events(warning) == []


def _feed(lines: list[str]) -> list[tuple[str, str | None, str]]:
    parser = LogParser()
    events = [event for line in lines for event in parser.feed(line)]
    events.extend(parser.flush())
    return [(event.kind, getattr(event, "category", None), getattr(event, "message", "")) for event in events]


def test_logger_exception_record_repeats_one_prefix_on_every_line() -> None:
    """`EngineCore encountered a fatal error.` is logged with `logger.exception`: NewLineFormatter puts
    the record's own prefix (same file:line) before each traceback line and ends all but the last in \\r."""
    prefix = "(EngineCore_DP0 pid=243) ERROR 08-20 14:03:20 [core.py:1348] "
    lines = [
        prefix + "EngineCore encountered a fatal error.\r",
        prefix + "Traceback (most recent call last):\r",
        prefix
        + '  File "/usr/lib/python3/site-packages/vllm/v1/engine/core.py", line 1120, in run_engine_core\r',
        prefix + "    engine_core.run_busy_loop()\r",
        prefix
        + "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
        "(APIServer pid=1) ERROR 08-20 14:03:21 [async_llm.py:744] AsyncLLM output_handler failed.",
    ]
    assert _feed(lines) == [
        ("error", "engine_dead", "EngineCore encountered a fatal error."),
        ("error", "oom", lines[4][len(prefix) :]),
        ("error", "traceback", lines[4][len(prefix) :]),
        ("error", "engine_dead", "AsyncLLM output_handler failed."),
    ]


def test_raw_stderr_traceback_with_only_the_process_prefix() -> None:
    """An uncaught exception reaches stderr without vLLM's formatter; decorate_logs still adds the
    process prefix (§5.7: `(APIServer pid=223598) RuntimeError: Engine core initialization failed...`)."""
    process = "(APIServer pid=223598) "
    exception = (
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    )
    lines = [
        process + "Traceback (most recent call last):",
        process + '  File "/usr/local/bin/vllm", line 8, in <module>',
        process + "    sys.exit(main())",
        process + "             ^^^^^^",
        process + exception,
        '(APIServer pid=1) INFO:     192.168.160.1:42510 - "GET /v1/models HTTP/1.1" 200 OK',
    ]
    assert _feed(lines) == [("error", "engine_dead", exception), ("error", "traceback", exception)]


NO_EVENT = {
    # Built from the --enable-logging-iteration-details format string (§2.2).
    "iteration": "(APIServer pid=1) INFO 08-20 14:05:00 [loggers.py:197] Engine 000: Iteration(120): 2 context requests, 2048 context tokens, 3 generation requests, 9 generation tokens, iteration elapsed time: 12.34 ms, GPU KV cache usage: 1.2%",
    # Built from the DiffusionDecoding format string (§2.3): not speculative decoding.
    "diffusion": "(APIServer pid=1) INFO 08-20 14:05:00 [metrics.py:160] DiffusionDecoding metrics: Committed token throughput: 12.00 tokens/s, Mean denoising steps per canvas: 3.00, Mean tokens committed per denoising step: 2.00, Committed: 120 tokens, Denoising steps: 60, Canvas positions evaluated: 240",
    # The spec warnings of §2.5 are warnings, not errors.
    "deprecated-method": "(APIServer pid=1) WARNING 08-20 14:02:14 [speculative.py:754] method `deepseek_mtp` is deprecated and replaced with mtp.",
    "min_p-warning": "(APIServer pid=1) WARNING 08-20 14:05:00 [__init__.py:206] min_p and logit_bias parameters won't work with speculative decoding.",
    # Start-up lines of §2.4 and uvicorn's own lines (samples/vllm/server.log lines 14, 27, 43, 45).
    "engine-config": "(EngineCore pid=243) INFO 08-20 14:02:24 [core.py:122] Initializing a V1 LLM engine (v0.28.0) with config: model='XiaomiMiMo/MiMo-7B-RL', speculative_config=SpeculativeConfig(method='mtp', model='XiaomiMiMo/MiMo-7B-RL', num_spec_tokens=2)",
    "kv-memory": "(EngineCore pid=243) INFO 08-20 14:03:16 [gpu_worker.py:578] Available KV cache memory: 107.02 GiB",
    "ready": "(APIServer pid=1) INFO:     Application startup complete.",
    "access": '(APIServer pid=1) INFO:     10.0.3.17:50118 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
}


@pytest.mark.parametrize("line", NO_EVENT.values(), ids=NO_EVENT.keys())
def test_lines_that_give_no_event(line: str) -> None:
    assert parse_events(line) == []
