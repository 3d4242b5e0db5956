# ruff: noqa: E501  (real log lines, kept whole)
"""Every log line quoted in the reference, and one per format string it lists -> the expected events."""

from __future__ import annotations

from typing import Any

import pytest

from tui.telemetry.logs import parse_events, parse_line

Expected = tuple[str, dict[str, Any]]


def stats(**fields: Any) -> Expected:
    return "stats", fields


def spec(**fields: Any) -> Expected:
    return "spec_decode", fields


def error(**fields: Any) -> Expected:
    return "error", fields


def _errors(table: str) -> list[tuple[str, str, str]]:
    """Rows `category | the message starts with | the line` (`#` rows are comments) -> (line, category, start)."""
    rows = [row.split(" | ", 2) for row in table.strip().splitlines() if not row.startswith("#")]
    return [(line, category, start) for category, start, line in rows]


# fmt: off
VLLM_CASES: list[tuple[str, str, Expected | list[Expected]]] = [
    ("vllm-ascend DP engine with External prefix cache",
     "(APIServer pid=95669) INFO 07-20 18:11:49 [loggers.py:271] Engine 002: Avg prompt throughput: 0.1 tokens/s, Avg generation throughput: 43.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.1%, Prefix cache hit rate: 0.0%, External prefix cache hit rate: 100.0%",
     stats(time="07-20 18:11:49", engine="2", prompt_tokens_per_s=0.1, generation_tokens_per_s=43.3, running=1, waiting=0, kv_cache_usage=0.101, prefix_cache_hit_rate=0.0, extra={"External prefix cache hit rate": 1.0})),
    ("vllm-ascend spec line k=3",
     "(APIServer pid=95669) INFO 07-20 18:11:49 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.87, Accepted throughput: 9.40 tokens/s, Drafted throughput: 15.10 tokens/s, Accepted: 282 tokens, Drafted: 453 tokens, Per-position acceptance rate: 0.821, 0.609, 0.437, Avg Draft acceptance rate: 62.3%",
     spec(mean_acceptance_length=2.87, accepted_tokens_per_s=9.4, drafted_tokens_per_s=15.1, accepted_tokens=282, drafted_tokens=453, per_position_acceptance=[0.821, 0.609, 0.437], acceptance_rate=0.623, scope="interval")),
    ("loggers.py:273 build",
     "(APIServer pid=1) INFO 08-14 11:31:25 [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 249.5 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.5%, Prefix cache hit rate: 0.0%",
     stats(generation_tokens_per_s=249.5, kv_cache_usage=0.065, engine="0", running=1)),
    ("metrics.py:120 build",
     "(APIServer pid=1) INFO 08-14 11:31:25 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 4.00, Accepted throughput: 187.08 tokens/s, Drafted throughput: 187.18 tokens/s, Accepted: 1871 tokens, Drafted: 1872 tokens, Per-position acceptance rate: 1.000, 1.000, 0.998, Avg Draft acceptance rate: 99.9%",
     spec(mean_acceptance_length=4.0, accepted_tokens=1871, drafted_tokens=1872, per_position_acceptance=[1.0, 1.0, 0.998], acceptance_rate=0.999)),
    ("uvicorn access line",
     '(APIServer pid=1) INFO:     192.168.160.1:42510 - "GET /v1/models HTTP/1.1" 200 OK',
     []),
    ("MM cache hit rate segment",
     "(APIServer pid=92107) INFO 05-08 16:21:55 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 28.4 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%, MM cache hit rate: 0.0%",
     stats(generation_tokens_per_s=28.4, running=0, extra={"MM cache hit rate": 0.0})),
    ("MM model spec line",
     "(APIServer pid=92107) INFO 05-08 16:21:55 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.20, Accepted throughput: 15.60 tokens/s, Drafted throughput: 38.99 tokens/s, Accepted: 78 tokens, Drafted: 195 tokens, Per-position acceptance rate: 0.615, 0.415, 0.169, Avg Draft acceptance rate: 40.0%",
     spec(mean_acceptance_length=2.2, acceptance_rate=0.4, per_position_acceptance=[0.615, 0.415, 0.169])),
    ("DFlash k=15 per-position list",
     "(APIServer pid=1) INFO 05-01 14:24:50 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.37, Accepted throughput: 8.90 tokens/s, Drafted throughput: 97.50 tokens/s, Accepted: 89 tokens, Drafted: 975 tokens, Per-position acceptance rate: 0.600, 0.385, 0.215, 0.108, 0.062, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, Avg Draft acceptance rate: 9.1%",
     spec(mean_acceptance_length=2.37, accepted_tokens=89, drafted_tokens=975, per_position_acceptance=[0.6, 0.385, 0.215, 0.108, 0.062] + [0.0] * 10, acceptance_rate=0.091)),
    ("saturation",
     "(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%",
     stats(running=18, waiting=43, kv_cache_usage=0.959, generation_tokens_per_s=1055.3)),
    ("V0 cumulative Speculative metrics, old prefix",
     "INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598, Number of speculative tokens: 3, Number of accepted tokens: 8547, Number of draft tokens: 13311, Number of emitted tokens: 10616.",
     spec(time="10-16 19:05:47", acceptance_rate=0.642, accepted_tokens=8547, drafted_tokens=13311, scope="lifetime", mean_acceptance_length=None)),
    ("V0 separate prefix cache line",
     "INFO 10-16 19:06:01 metrics.py:361] Prefix cache hit rate: GPU: 94.35%, CPU: 0.00%",
     stats(time="10-16 19:06:01", prefix_cache_hit_rate=0.9435, running=None)),
    ("V0 stats line",
     "INFO 10-16 19:05:47 metrics.py:345] Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 25.3 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 2 reqs, GPU KV cache usage: 1.2%, CPU KV cache usage: 0.0%.",
     stats(prompt_tokens_per_s=512.3, generation_tokens_per_s=25.3, running=3, waiting=2, kv_cache_usage=0.012, prefix_cache_hit_rate=None, engine=None)),
    ("never-shipped PR order, rate first",
     "(APIServer pid=2236552) INFO 09-09 11:51:35 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: 88.8%, Mean acceptance length: 5.44, Accepted throughput: 4.37 tokens/s, Drafted throughput: 4.92 tokens/s, Accepted: 262 tokens, Drafted: 295 tokens, Per-position acceptance rate: 0.983, 0.949, 0.915, 0.881, 0.712",
     spec(acceptance_rate=0.888, mean_acceptance_length=5.44, accepted_tokens_per_s=4.37, drafted_tokens_per_s=4.92, accepted_tokens=262, drafted_tokens=295, per_position_acceptance=[0.983, 0.949, 0.915, 0.881, 0.712])),
    ("V1 Apr 2025 Speculative metrics with trailing comma",
     "INFO 04-02 10:00:00 [metrics.py:80] Speculative metrics: Draft acceptance rate: 0.650, Number of accepted tokens: 130, Number of draft tokens: 200, ",
     spec(acceptance_rate=0.65, accepted_tokens=130, drafted_tokens=200, scope="interval")),
    ("V1 Apr 2025 SpecDecoding short form",
     "INFO 04-03 10:00:00 [metrics.py:80] SpecDecoding metrics: Draft acceptance rate: 66.7%, Accepted: 100 tokens, Drafted: 150 tokens",
     spec(acceptance_rate=0.667, accepted_tokens=100, drafted_tokens=150)),
    ("V1 Apr-May 2025: mean length without the bonus token",
     "INFO 04-30 10:00:00 [metrics.py:80] SpecDecoding metrics: Draft acceptance rate: 70.0%, Mean acceptance length: 1.40, Accepted: 140 tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.800, 0.600",
     spec(acceptance_rate=0.7, mean_acceptance_length=2.4, per_position_acceptance=[0.8, 0.6])),
    ("V1 May-Sep 2025: mean length with the bonus token",
     "INFO 06-30 10:00:00 [metrics.py:80] SpecDecoding metrics: Draft acceptance rate: 70.0%, Mean acceptance length: 2.40, Accepted: 140 tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.800, 0.600",
     spec(mean_acceptance_length=2.4)),
    ("no drafts: nan",
     "(APIServer pid=1) INFO 08-20 14:05:00 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: nan, Accepted throughput: 0.00 tokens/s, Drafted throughput: 0.00 tokens/s, Accepted: 0 tokens, Drafted: 0 tokens, Per-position acceptance rate: nan, nan, Avg Draft acceptance rate: nan%",
     spec(mean_acceptance_length=None, acceptance_rate=None, accepted_tokens=0)),
    ("every optional stats segment",
     "(APIServer pid=7) INFO 08-20 14:05:00 [loggers.py:310] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 20.0 tokens/s, Running: 4 reqs, Waiting: 6 reqs, Deferred: 2 reqs, Preemptions: 3, GPU KV cache usage: 50.0%, Prefix cache hit rate: 25.0%, Corrupted: 1 reqs, External prefix cache hit rate: 12.5%, MM cache hit rate: 5.0%",
     stats(running=4, waiting=6, kv_cache_usage=0.5, prefix_cache_hit_rate=0.25, extra={"Deferred": 2, "Preemptions": 3, "Corrupted": 1, "External prefix cache hit rate": 0.125, "MM cache hit rate": 0.05})),
    ("aggregated DP engines",
     "(APIServer pid=7) INFO 08-20 14:05:00 [loggers.py:310] 4 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%",
     stats(engine="aggregated", running=8)),
    ("early V1 line without the engine prefix",
     "INFO 02-20 10:00:00 [loggers.py:72] Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 200.0 tokens/s, Running: 2 reqs, Waiting: 1 reqs, GPU KV cache usage: 4.0%, Prefix cache hit rate: 12.5%",
     stats(engine=None, running=2, waiting=1, prefix_cache_hit_rate=0.125)),
    ("coloured (ANSI) line",
     "\x1b[36m(APIServer pid=1)\x1b[0m \x1b[32mINFO\x1b[0m \x1b[90m08-20 14:04:17\x1b[0m \x1b[90m[loggers.py:310]\x1b[0m Engine 000: Avg prompt throughput: 387.9 tokens/s, Avg generation throughput: 277.9 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.7%, Prefix cache hit rate: 34.6%",
     stats(time="08-20 14:04:17", generation_tokens_per_s=277.9, kv_cache_usage=0.007)),
    ("line ending in \\r (NewLineFormatter continuation)",
     "(APIServer pid=1) INFO 08-20 14:04:17 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.42, Accepted throughput: 39.17 tokens/s, Drafted throughput: 55.20 tokens/s, Accepted: 1629 tokens, Drafted: 2296 tokens, Per-position acceptance rate: 0.807, 0.612, Avg Draft acceptance rate: 70.9%\r\n",
     spec(acceptance_rate=0.709, per_position_acceptance=[0.807, 0.612])),
    ("DEBUG path prefix (VLLM_LOGGING_LEVEL=DEBUG)",
     "(APIServer pid=1) DEBUG 08-20 14:06:17 [v1/metrics/loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 50.9%",
     stats(time="08-20 14:06:17", running=0, generation_tokens_per_s=0.0)),
    ("logo line ending in \\r",
     "(APIServer pid=1) INFO 08-20 14:02:06 [api_utils.py:333]   version 0.28.0\r",
     []),
    ("CPU build: `CPU KV cache usage` is the KV figure (samples/vllm-cpu-real)",
     "(APIServer pid=24700) INFO 12-01 19:30:19 [loggers.py:335] Engine 000: Avg prompt throughput: 3.1 tokens/s, Avg generation throughput: 14.8 tokens/s, Running: 1 reqs, Waiting: 0 reqs, CPU KV cache usage: 0.7%, Prefix cache hit rate: 0.0%",
     stats(kv_cache_usage=0.007, running=1, generation_tokens_per_s=14.8, engine="0", extra=None)),
    ("V0 trailing CPU KV cache usage (swap) stays an extra",
     "INFO 05-06 21:33:52 metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 57.3 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.2%, CPU KV cache usage: 0.0%.",
     stats(kv_cache_usage=0.012, extra={"CPU KV cache usage": 0.0})),
    ("old format: the mean length without the bonus token (before 2025-05-09)",
     "INFO 04-30 10:00:00 [metrics.py:80] SpecDecoding metrics: Draft acceptance rate: 25.0%, Mean acceptance length: 0.50, Accepted: 50 tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.300, 0.200",
     spec(mean_acceptance_length=1.5)),
]
# fmt: on

VLLM_ERROR_CASES = _errors(
    """
oom | torch.OutOfMemoryError: CUDA out of memory. | (EngineCore pid=112) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 21.75 MiB is free. ...
engine_dead | AsyncLLM output_handler failed. | (APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed.
engine_dead | RuntimeError: Engine core initialization failed. | (APIServer pid=223598) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
oom | Failed to load model - not enough GPU memory. | (EngineCore pid=243) ERROR 08-20 14:02:42 [gpu_model_runner.py:5511] Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. (original error: CUDA out of memory)
oom | RuntimeError: CUDA out of memory occurred | (EngineCore pid=243) ERROR 08-20 14:03:14 [core.py:1131] RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.
oom | ValueError: No available memory | (EngineCore pid=243) ERROR 08-20 14:03:16 [core.py:1131] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
oom | ValueError: To serve | ValueError: To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV cache memory (8.5 GiB). Based on the available memory, the estimated maximum model length is 69632.
oom | ValueError: Free memory | (EngineCore pid=243) ERROR 08-20 14:02:26 [core.py:1131] ValueError: Free memory on device cuda:0 (60.1/139.8 GiB) on startup is less than desired GPU memory utilization (0.92, 128.6 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.
oom | RuntimeError: CUDA driver error | RuntimeError: CUDA driver error: out of memory
engine_dead | EngineCore failed to start. | (EngineCore pid=243) ERROR 08-20 14:03:20 [core.py:1346] EngineCore failed to start.
engine_dead | EngineCore encountered a fatal error. | (EngineCore pid=243) ERROR 08-20 14:03:20 [core.py:1348] EngineCore encountered a fatal error.
engine_dead | vllm.v1.engine.exceptions.EngineDeadError | (APIServer pid=1) ERROR 08-20 14:03:21 [serving_chat.py:1200] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
spec_config | ValueError: num_speculative_tokens | ValueError: num_speculative_tokens was provided but without speculative model.
spec_config | NotImplementedError | NotImplementedError: Unsupported speculative method: 'eagle4'
spec_config | ValueError: 'tensor_parallel_size' | ValueError: 'tensor_parallel_size' is not a valid argument in the speculative_config. Please pass 'draft_tensor_parallel_size' instead.
spec_config | ValueError | ValueError: num_speculative_tokens:3 must be divisible by n_predict=2
spec_config | ValueError: A speculative model | ValueError: A speculative model was provided, but `num_speculative_tokens` was not provided
spec_config | ValueError: Either | ValueError: Either prompt_lookup_max or prompt_lookup_min must be provided when using the ngram method.
spec_config | ValueError | ValueError: prompt_lookup_min=5 must be <= prompt_lookup_max=3
spec_config | ValueError | ValueError: speculative_max_model_len=8192 cannot be larger than draft_max_model_len=4096
spec_config | pydantic_core | pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig
spec_config | vllm serve: error | vllm serve: error: argument --speculative-config/-sc: Value {method: mtp} cannot be converted to <function loads at 0x7f3a2c1b5d00>.
spec_config | ValueError | ValueError: Consider increasing max_num_batched_tokens or decreasing num_speculative_tokens
spec_config | vllm serve: error: unrecognized | vllm serve: error: unrecognized arguments: --num-speculative-tokens 2
other | ERROR: | (APIServer pid=1) ERROR:    Exception in ASGI application
other | Engine background task failed | ERROR 10-16 19:05:47 async_llm_engine.py:61] Engine background task failed
engine_dead | vllm.engine.async_llm_engine.AsyncEngineDeadError | vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.
engine_dead | [rank0] | [rank0]:[E1120 10:00:00.000000 123 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.
other | Error in preprocessing | (APIServer pid=1) ERROR 08-20 14:05:00 [serving_chat.py:300] Error in preprocessing prompt inputs
traceback | Traceback | (EngineCore pid=243) ERROR 08-20 14:03:20 [core.py:1131] Traceback (most recent call last):
"""
)

# fmt: off
SGLANG_CASES: list[tuple[str, str, Expected | list[Expected]]] = [
    ("2025-05 MTP + DP attention, period, no accept rate",
     "[2025-05-31 10:00:00 DP6 TP6] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, accept len: 2.90, cuda graph: True, gen throughput (token/s): 171.01, #queue-req: 0",
     [stats(time="2025-05-31T10:00:00", engine="DP6 TP6", phase="decode", running=8, kv_cache_usage=0.13, generation_tokens_per_s=171.01, waiting=0, extra={"#token": 37217, "cuda graph": True}), spec(mean_acceptance_length=2.9, acceptance_rate=None, engine="DP6 TP6")]),
    ("2025-10 EAGLE3 with accept rate and trailing comma",
     "[2025-10-22 08:00:00 TP0] Decode batch. #running-req: 1, #token: 108, token usage: 0.00, accept len: 2.17, accept rate: 0.54, cuda graph: True, gen throughput (token/s): 0.39, #queue-req: 0, ",
     [stats(running=1, generation_tokens_per_s=0.39, waiting=0, kv_cache_usage=0.0), spec(mean_acceptance_length=2.17, acceptance_rate=0.54)]),
    ("2025-10 prefill, period, trailing comma",
     "[2025-10-22 08:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 812, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
     stats(phase="prefill", new_tokens=812, cached_tokens=0, running=0, waiting=0)),
    ("2026-08 PD decode node",
     "[2026-08-14 12:00:00 TP0] Decode batch, #running-req: 3, #token: 266624, token usage: 0.43, accept len: 1.67, accept rate: 0.13, pre-allocated usage: 0.22, #prealloc-req: 0, #transfer-req: 1, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 183.10, #queue-req: 0",
     [stats(running=3, kv_cache_usage=0.43, generation_tokens_per_s=183.1, extra={"#token": 266624, "pre-allocated usage": 0.22, "#prealloc-req": 0, "#transfer-req": 1, "#retracted-req": 0, "cuda graph": True}), spec(mean_acceptance_length=1.67, acceptance_rate=0.13)]),
    ("2026-07 Ascend prefill, npu graph, TP0 EP0",
     "[2026-07-21 10:00:00 TP0 EP0] Prefill batch, #new-seq: 8, #new-token: 54400, #cached-token: 482304, token usage: 0.66, #running-req: 16, #queue-req: 2, #pending-token: 0, npu graph: False, input throughput (token/s): 2793.64",
     stats(engine="TP0 EP0", new_tokens=54400, cached_tokens=482304, kv_cache_usage=0.66, running=16, waiting=2, prompt_tokens_per_s=2793.64, prefix_cache_hit_rate=482304 / (482304 + 54400), extra={"#new-seq": 8, "#pending-token": 0, "npu graph": False})),
    ("2026-07 Ascend decode",
     "[2026-07-21 10:00:01 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, accept len: 3.05, accept rate: 0.68, npu graph: True, gen throughput (token/s): 239.06, #queue-req: 2",
     [stats(running=24, waiting=2, generation_tokens_per_s=239.06), spec(mean_acceptance_length=3.05, acceptance_rate=0.68)]),
    ("2026-07 hybrid SSM decode",
     "[2026-07-04 10:00:00 TP0] Decode batch, #running-req: 40, #full token: 350592, full token usage: 0.74, mamba num: 160, mamba usage: 0.80, accept len: 3.13, accept rate: 0.71, npu graph: True, gen throughput (token/s): 155.34, #queue-req: 0",
     [stats(running=40, kv_cache_usage=0.74, generation_tokens_per_s=155.34, extra={"#full token": 350592, "mamba num": 160, "mamba usage": 0.8, "npu graph": True}), spec(mean_acceptance_length=3.13, acceptance_rate=0.71)]),
    ("hybrid SSM prefill",
     "[2026-07-04 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 4096, #cached-token: 0, full token usage: 0.28, mamba usage: 0.20, #running-req: 39, #queue-req: 0, #pending-token: 0, npu graph: False, input throughput (token/s): 5000.00",
     stats(kv_cache_usage=0.28, prompt_tokens_per_s=5000.0, extra={"mamba usage": 0.2})),
    ("hybrid SWA decode",
     "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 4, #full token: 1000, full token usage: 0.10, #swa token: 500, swa token usage: 0.05, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0",
     stats(kv_cache_usage=0.1, extra={"swa token usage": 0.05, "#swa token": 500})),
    ("ms timestamp",
     "[2026-07-20 09:50:00.123 TP0] Decode batch, #running-req: 32, #token: 91874, token usage: 0.16, accept len: 2.93, accept rate: 0.64, cuda graph: True, gen throughput (token/s): 2281.38, #queue-req: 0",
     [stats(time="2026-07-20T09:50:00.123"), spec(time="2026-07-20T09:50:00.123")]),
    ("tp=1: empty rank prefix",
     "[2026-07-20 09:50:00] Decode batch, #running-req: 2, #token: 500, token usage: 0.01, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
     stats(engine=None, running=2, generation_tokens_per_s=80.0)),
    ("SGLANG_LOG_FORWARD_ITERS iteration number",
     "[2026-07-20 09:50:00 TP0] Decode batch [12345], #running-req: 2, #token: 500, token usage: 0.01, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
     stats(running=2, phase="decode")),
    ("2025-10-23 [iter] variant with comma",
     "[2025-10-24 09:50:00 TP0] Prefill batch [77], #new-seq: 1, #new-token: 10, #cached-token: 30, token usage: 0.01, #running-req: 0, #queue-req: 0, ",
     stats(phase="prefill", new_tokens=10, cached_tokens=30, prefix_cache_hit_rate=0.75)),
    ("2024 legacy clock-only prefix",
     "[10:00:00 TP0] Decode batch. #running-req: 5, #token: 1000, token usage: 0.02, gen throughput (token/s): 300.00, #queue-req: 1",
     stats(time="10:00:00", engine="TP0", running=5, waiting=1)),
    ("2024-07 and older: no batch word",
     "[gpu_id=0] #running-req: 1, #token: 100, token usage: 0.01, gen throughput (token/s): 50.00, #queue-req: 0",
     stats(phase="decode", running=1, generation_tokens_per_s=50.0)),
    ("2024-08 [gpu=N] Decode batch.",
     "[gpu=0] Decode batch. #running-req: 1, #token: 100, token usage: 0.01, gen throughput (token/s): 50.00, #queue-req: 0",
     stats(phase="decode", running=1)),
    ("2024-09 prefill with cache hit rate percent",
     "[2024-11-01 10:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 50, #cached-token: 150, cache hit rate: 75.00%, token usage: 0.01, #running-req: 0, #queue-req: 0",
     stats(prefix_cache_hit_rate=0.75, new_tokens=50, cached_tokens=150)),
    ("2025-03 largest-len and trailing comma",
     "[2025-03-10 10:00:00 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01, gen throughput (token/s): 90.00, largest-len: 0, #queue-req: 0, ",
     stats(running=3, waiting=0, extra={"#token": 900, "largest-len": 0})),
    ("2025-07 timestamp field",
     "[2025-07-10 12:34:56 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01, accept len: 2.50, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0, timestamp: 2025-07-10T12:34:56.789012",
     [stats(waiting=0, extra={"timestamp": "2025-07-10T12:34:56.789012"}), spec(mean_acceptance_length=2.5)]),
    ("2026-01-30 prefill: graph label last",
     "[2026-02-01 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 100, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0, input throughput (token/s): 100.00, cuda graph: False",
     stats(prompt_tokens_per_s=100.0, extra={"cuda graph": False})),
    ("CPU graph label, MFU and occupancy suffixes",
     "[2026-07-20 09:50:00 DP1 TP1] Decode batch, #running-req: 2, #token: 500, token usage: 0.01, cpu graph: False, gen throughput (token/s): 8.00, #queue-req: 0, est. decode TFLOPS/s (per GPU): 1.50, est. read BW (GB/s per GPU): 300.00, est. write BW (GB/s per GPU): 10.00, fwd occupancy: 45.20%",
     stats(engine="DP1 TP1", generation_tokens_per_s=8.0, extra={"cpu graph": False, "fwd occupancy": 0.452, "est. decode TFLOPS/s (per GPU)": 1.5})),
    ("DSpark fields",
     "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 2, #token: 500, token usage: 0.01, accept len: 3.10, accept rate: 0.70, cap len: 4.00, block accept len: 2.80, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
     [stats(extra={"cap len": 4.0, "block accept len": 2.8}), spec(mean_acceptance_length=3.1)]),
    ("ATTN_CP and MOE_DP rank parts",
     "[2026-07-20 09:50:00 DP0 PP1 ATTN_CP2 MOE_DP3 TP4 EP5] Decode batch, #running-req: 2, #token: 500, token usage: 0.01, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
     stats(engine="DP0 PP1 ATTN_CP2 MOE_DP3 TP4 EP5")),
    ("retract warning is not an error",
     "[2026-07-20 09:50:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 1000, #new_token_ratio: 0.7 -> 0.8",
     []),
    # sglang.md §2.4 "Lines a monitor should flag": no level and none of the usual error words
    *(
        (
            f"flagged: {message[:40]}",
            f"[2026-07-20 09:50:12 TP0] {message}",
            error(category="other", backend="sglang", message=message),
        )
        for message in (
            "token_to_kv_pool_allocator memory leak detected! available_size=100, total=200",
            "Config file must be YAML format, got: .json",
            "Config file not found: /etc/sglang/config.yaml",
            "Multiple config files specified! Only one allowed.",
            "Unsupported config option 'foo' with action 'store_true'",
        )
    ),
    # sglang.md §2.3, b6fb5d766 (2025-10-13 → 10-23): that build's rate could exceed 1 (§5.1): no fraction
    ("b6fb5d766 accept rate above one: the length kept, the rate unknown",
     "[2025-10-13 10:00:00 TP0] Decode batch. #running-req: 4, #token: 900, token usage: 0.01, accept len: 3.50, accept rate: 1.17, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0, ",
     [stats(running=4), spec(mean_acceptance_length=3.5, acceptance_rate=None)]),
    # sglang.md §0 / §2.3 last row: 00df707e puts `#cached-token` in the Decode line; not prefix hits there
    ("decode #cached-token is an extra, not a prefill prefix-hit count",
     "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 32, #cached-token: 1200, #token: 91874, token usage: 0.16, accept len: 2.93, accept rate: 0.64, cuda graph: True, gen throughput (token/s): 2281.38, #queue-req: 0",
     [stats(phase="decode", running=32, kv_cache_usage=0.16, generation_tokens_per_s=2281.38, cached_tokens=None, new_tokens=None, prefix_cache_hit_rate=None, extra={"#cached-token": 1200}), spec()]),
    ("an ordinary line about the config file is not flagged",
     "[2026-07-20 09:15:12] Loading the config file /etc/sglang/config.yaml",
     []),
]
# fmt: on

SGLANG_ERROR_CASES = _errors(
    """
engine_dead | Scheduler | [2026-07-20 09:50:11 TP0] Scheduler hit an exception: Traceback (most recent call last):
engine_dead | Received sigquit | [2026-07-20 09:50:12] Received sigquit from a child process. It usually means the child failed.
oom | RuntimeError: Not enough memory | RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.7
oom | Prefill out of memory | [2026-07-20 09:50:11 TP0] Prefill out of memory. Try to lower your batch size.
oom | Decode out of memory | [2026-07-20 09:50:11 TP0] Decode out of memory. Try to lower your batch size.
oom | Try to allocate | Try to allocate 4096 tokens.
oom | Exception: Capture cuda graph failed | Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB.
engine_dead | Scheduler watchdog timeout | [2026-07-20 09:55:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)
engine_dead | Health check failed | [2026-07-20 09:55:00] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 09:54:40. last_heartbeat time: 09:54:30
spec_config | ValueError: Unknown | ValueError: Unknown speculative algorithm name: MTP
spec_config | launch_server.py: error | launch_server.py: error: argument --speculative-algorithm: invalid choice: 'MTP' (choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')
spec_config | ValueError | ValueError: trtllm_mha backend only supports topk = 1 for speculative decoding.
spec_config | ValueError | ValueError: speculative_eagle_topk > 1 with page_size > 1 is only supported on ('flashinfer', 'fa3', 'triton') attention backends
spec_config | ValueError | ValueError: Currently standalone speculative decoding does not support dp attention.
spec_config | ValueError | ValueError: Currently ngram speculative decoding does not support dp attention.
spec_config | ValueError | ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path.
spec_config | ValueError | ValueError: --speculative-use-rejection-sampling requires --speculative-eagle-topk=1.
spec_config | AssertionError | AssertionError: Pipeline parallelism is not compatible with overlap schedule, speculative decoding, mixed chunked prefill.
spec_config | AssertionError | AssertionError: enable_mixed_chunk is required for speculative decoding
other | ValueError: Config file | ValueError: Config file must be YAML format, got: .json
# an illegal memory access is a crash, not an out-of-memory condition
other | RuntimeError: CUDA error | RuntimeError: CUDA error: an illegal memory access was encountered
other | Error: detokenizer | [2026-07-20 09:50:00] Error: detokenizer stopped
other | ERROR: | [2026-07-20 09:50:00] ERROR:    Exception in ASGI application
"""
)

# fmt: off
LLAMACPP_CASES: list[tuple[str, str, Expected | list[Expected]]] = [
    # llama.cpp prints no wall time (time None), only the time since start (uptime)
    ("identical draft",
     "0.00.640.963 I slot print_timing: id  0 | task 2 | draft acceptance = 1.00000 (   56 accepted /    56 generated), mean len =  9.00",
     spec(time=None, uptime="0.00.640.963", acceptance_rate=1.0, accepted_tokens=56, drafted_tokens=56, mean_acceptance_length=9.0, scope="request")),
    ("random draft",
     "0.00.801.786 I slot print_timing: id  1 | task 2 | draft acceptance = 0.00000 (    0 accepted /   468 generated), mean len =  1.00",
     spec(acceptance_rate=0.0, accepted_tokens=0, drafted_tokens=468, mean_acceptance_length=1.0)),
    ("noisy draft",
     "0.00.703.475 I slot print_timing: id  1 | task 67 | draft acceptance = 0.25926 (   42 accepted /   162 generated), mean len =  3.00",
     spec(acceptance_rate=0.25926, accepted_tokens=42, drafted_tokens=162, mean_acceptance_length=3.0)),
    ("acc per pos (trace)",
     "0.00.701.695 I slot print_timing: id  1 | task 2 |      acc per pos = (0.810, 0.476, 0.286, 0.190, 0.143, 0.095, 0.000, 0.000)",
     spec(per_position_acceptance=[0.81, 0.476, 0.286, 0.19, 0.143, 0.095, 0.0, 0.0], scope="request")),
    ("statistics (trace, lifetime)",
     "0.00.701.728 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     21     21, #gen drafts =     21, #acc drafts =    17, #gen tokens =    162, #acc tokens =    42, #mean acc len = 3.00, #acc rate/pos = (0.810, 0.476, 0.286, 0.190, 0.143, 0.095), dur(b,g,a) = 0.029, 44.037, 0.017 ms",
     spec(accepted_tokens=42, drafted_tokens=162, num_drafts=21, mean_acceptance_length=3.0, acceptance_rate=42 / 162, per_position_acceptance=[0.81, 0.476, 0.286, 0.19, 0.143, 0.095], scope="lifetime")),
    ("statistics with an empty per-position list",
     "0.00.776.820 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     62     62, #gen drafts =     62, #acc drafts =     0, #gen tokens =    468, #acc tokens =     0, #mean acc len = 1.00, #acc rate/pos = (), dur(b,g,a) = 0.036, 44.612, 0.013 ms",
     spec(accepted_tokens=0, drafted_tokens=468, per_position_acceptance=None, acceptance_rate=0.0)),
    ("per-step LLAMA_TRACE line",
     "0.00.611.640 I slot   operator(): id  1 | task 2 | accepted  8/ 8 draft tokens",
     []),
    ("eval time",
     "0.00.640.948 I slot print_timing: id  0 | task 2 |        eval time =      53.50 ms /    64 tokens (    0.85 ms per token,  1177.53 tokens per second)",
     []),
    ("allocation retry is a warning",
     "1.06.520.107 W sched_reserve: compute buffer allocation failed, retrying without pipeline parallelism",
     []),
]
# fmt: on

LLAMACPP_ERROR_CASES = _errors(
    """
spec_config | error while handling argument | error while handling argument "--draft-max": the argument has been removed. use --spec-draft-n-max or --spec-ngram-mod-n-max
spec_config | error: invalid argument | error: invalid argument: -cd
oom | ggml_backend_cuda_buffer_type_alloc_buffer | 1.06.520.077 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 51748.72 MiB on device 1: cudaMalloc failed: out of memory
oom | ggml_gallocr_reserve_n_impl | 1.06.520.084 E ggml_gallocr_reserve_n_impl: failed to allocate CUDA1 buffer of size 54262464512
oom | graph_reserve | 1.06.520.086 E graph_reserve: failed to allocate compute buffers
oom | alloc_tensor_range | alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624
oom | llama_model_load | llama_model_load: error loading model: unable to allocate CUDA0 buffer
other | srv    load_model | 0.01.000.000 E srv    load_model: failed to load model, 'models/x.gguf'
"""
)


# fmt: off
WRAPPED_CASES: list[tuple[str, str, Expected | list[Expected]]] = [
    ("containerd CRI wrapper around SGLang",
     "2026-07-20T09:50:00.123456789Z stdout F [2026-07-20 09:50:00 TP0] Decode batch, #running-req: 2, #token: 500, token usage: 0.01, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
     stats(time="2026-07-20T09:50:00", engine="TP0", running=2, backend="sglang")),
    ("journald wrapper around vLLM",
     "Jul 20 09:50:00 gpu1 vllm[123]: (APIServer pid=1) INFO 07-20 09:50:00 [loggers.py:310] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%",
     stats(time="07-20 09:50:00", engine="0", running=8, backend="vllm")),
    ("docker compose wrapper around a vLLM error",
     "web-1  | (EngineCore pid=9) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory.",
     error(category="oom", time="05-01 14:39:06", message="torch.OutOfMemoryError: CUDA out of memory.")),
    ("docker compose wrapper around a vLLM INFO line with error words",
     "web-1  | (APIServer pid=1) INFO 05-01 14:39:06 [x.py:1] no error, memory is fine",
     []),
    ("older vLLM worker prefix",
     "(VllmWorker rank=0 pid=9) ERROR 05-01 14:39:06 [multiproc_executor.py:500] WorkerProc hit an exception.",
     error(category="other", backend="vllm")),
    ("Ray worker prefix",
     "(RayWorkerWrapper pid=9, ip=10.0.0.1) ERROR 05-01 14:39:06 [worker.py:1] RuntimeError: CUDA error: out of memory",
     error(category="oom", backend="vllm")),
    ("older llama.cpp `draft acceptance rate` without prefix or mean length",
     "slot print_timing: id  0 | task 2 | draft acceptance rate = 0.57576 (   19 accepted /    33 generated)",
     spec(acceptance_rate=0.57576, accepted_tokens=19, drafted_tokens=33, mean_acceptance_length=None, time=None)),
]
# fmt: on


# Wrapped and older prefixes (backend None): their cases say the backend where it is known.
BACKEND_CASES = [
    pytest.param(line, expected, backend, id=name)
    for backend, cases in (
        ("vllm", VLLM_CASES),
        ("sglang", SGLANG_CASES),
        ("llamacpp", LLAMACPP_CASES),
        (None, WRAPPED_CASES),
    )
    for name, line, expected in cases
]


@pytest.mark.parametrize(("line", "expected", "backend"), BACKEND_CASES)
def test_reference_lines(line: str, expected: Expected | list[Expected], backend: str | None) -> None:
    if isinstance(expected, tuple):
        expected = [expected]
    events = parse_events(line)
    assert [event.kind for event in events] == [kind for kind, _ in expected], events
    for event, (_, fields) in zip(events, expected, strict=True):
        for name, value in fields.items():
            actual = getattr(event, name)
            if name == "extra" and value is not None:
                assert actual is not None
                for key, extra in value.items():
                    want = extra if isinstance(extra, bool | str) else pytest.approx(extra)
                    assert actual[key] == want, key
            elif isinstance(value, float) or (isinstance(value, list) and value):
                assert actual == pytest.approx(value), name
            else:
                assert actual == value, name
    first = parse_line(line)
    assert (first.kind if first else None) == (expected[0][0] if expected else None)
    if backend is not None:
        assert {event.backend for event in events} <= {backend}


@pytest.mark.parametrize(
    ("line", "category", "message_start"),
    ERROR_CASES := VLLM_ERROR_CASES + SGLANG_ERROR_CASES + LLAMACPP_ERROR_CASES,
    ids=[case[0][:60] for case in ERROR_CASES],
)
def test_error_lines_are_classified(line: str, category: str, message_start: str) -> None:
    event = parse_line(line)
    assert event is not None and event.kind == "error", event
    assert event.category == category
    assert event.message.startswith(message_start)
    assert event.line == line
