"""The first lines a server process prints (vllm.md §2.4, sglang.md §2.4, llamacpp.md §3.2): what tells a
new process's log from the end of the old one's, whose shutdown logs errors of its own (vLLM logs
`EngineDeadError` and `output_handler failed` on every SIGTERM)."""

from __future__ import annotations

import re

START_MARKS = (
    "non-default args: ",  # vLLM's API server, before it starts the engine core
    "vLLM API server version ",  # vLLM before the logo
    "vLLM server version ",  # vLLM with VLLM_DISABLE_LOG_LOGO=1
    "server_args=ServerArgs(",  # SGLang
    "llama_server: initializing",  # llama.cpp
    "Started server process [",  # uvicorn (vLLM, SGLang), once the engine is up
)
_LLAMA_BUILD = re.compile(r"\bbuild(?::| =) \d+")  # older llama.cpp: `build: 4067 (54ef9cfc) with cc ...`


def is_process_start(line: str) -> bool:
    """True for a line that only a server process starting prints."""
    return any(mark in line for mark in START_MARKS) or _LLAMA_BUILD.search(line) is not None
