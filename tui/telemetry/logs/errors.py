"""Classifying error lines by message text (vllm.md §2.5, sglang.md §2.4, llamacpp.md §1): SGLang has no
level field; a known level below ERROR is never an error."""

from __future__ import annotations

import re

from tui.telemetry.events import ErrorCategory

OOM_PATTERNS = (
    "out of memory",  # torch CUDA OOM, cudaMalloc, `Prefill/Decode out of memory`, CUDA driver error
    "OutOfMemoryError",
    "No available memory for the cache blocks",
    "not enough GPU memory",
    "which is larger than the available KV cache memory",
    "is less than desired GPU memory utilization",
    "Not enough memory. Please try to increase --mem-fraction-static",
    "Capture cuda graph failed",
    "Try to allocate ",  # SGLang's second line after `Prefill out of memory.`
    "failed to allocate",  # ggml: `failed to allocate CUDA0 buffer`, `failed to allocate compute buffers`
    "unable to allocate",  # llama_model_load: `unable to allocate CUDA0 buffer`
    "failed to find a memory slot",  # llama.cpp: KV cache full for a batch
    "failed to find free space in the KV cache",
)
_OOM_WORD = re.compile(r"(?<![A-Za-z])OOM(?![A-Za-z])")  # `CUDA OOM`, not `ZOOM`
ENGINE_DEAD_PATTERNS = (
    "EngineDeadError",
    "Engine core initialization failed",
    "EngineCore failed to start",
    "EngineCore encountered a fatal error",
    "EngineCore encountered an issue",
    "Engine process failed to start",
    "output_handler failed",
    "died unexpectedly",
    "Scheduler hit an exception",
    "Received sigquit from a child process",
    "unexpectedly failed with exitcode",
    "Scheduler watchdog timeout",
    "Health check failed. Server couldn't get a response",
    "Detokenizer hit an exception",
    "TokenizerManager hit an exception",
    "Engine loop has died",  # vLLM V0 AsyncLLMEngine
    "Background loop has errored",
    "Watchdog caught collective operation timeout",  # NCCL: a rank is stuck, the engine with it
)
SPEC_CONFIG_PATTERNS = (
    "num_speculative_tokens was provided but without speculative model",
    "Unsupported speculative method",
    "is not a valid argument in the speculative_config",
    "must be divisible by n_predict",
    "A speculative model was provided, but",
    "prompt_lookup_max or prompt_lookup_min must be provided",
    "must be <= prompt_lookup_max",
    "cannot be larger than draft_max_model_len",
    "for SpeculativeConfig",
    "--speculative-config",
    "argument --speculative",
    "Unknown speculative algorithm name",
    "only supports topk = 1 for speculative decoding",
    "speculative_eagle_topk > 1 with page_size > 1",
    "speculative decoding does not support",
    "speculative decoding requires",
    "--speculative-use-rejection-sampling requires",
    "is not compatible with overlap schedule, speculative decoding",
    "enable_mixed_chunk is required for speculative decoding",
    "decreasing num_speculative_tokens",
    "the argument has been removed",  # llama.cpp removed --draft-* flags
)
# SGLang's text-only "degraded" and "config file" rows (sglang.md §2.4): no level, no error word. The KV
# pool's "Retract requests" is a warning of a busy scheduler, not an error (no alert for it).
FLAGGED_TEXT_PATTERNS = (
    "memory leak detected!",
    "Config file must be YAML format",
    "Config file not found:",
    "Multiple config files specified!",
    "Unsupported config option '",
)
# Argument errors that are about drafting even though the flag name does not say so.
_REMOVED_DRAFT_FLAGS = re.compile(r"invalid argument: (?:-cd|--ctx-size-draft|-devd|-ngld|-td|-tbd)\b")
_ARGUMENT_ERROR = re.compile(r"(?:^|: )error(?: while handling argument|: (?:argument|unrecognized|invalid))")
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)?(?:\([^)]*\))?: \S"
)
_EXCEPTION_NAME = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?(?:Error|Exception)\b")

TRACEBACK_START = "Traceback (most recent call last):"
TRACEBACK_CONTINUATIONS = (
    "During handling of the above exception",
    "The above exception was the direct cause",
    "Exception Group Traceback",
)

_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL"})


# A line without one of these words cannot be an error.
_GATE = re.compile(
    "rror|RROR|xception|ailed|memory|alloc|Traceback|CRITICAL|OOM|"
    "speculative|argument|sigquit|atchdog|died|onfig "
)


def passes_gate(line: str) -> bool:
    return _GATE.search(line) is not None


_QUIET_LEVELS = ("INFO", "DEBUG", "WARNING")


def has_quiet_level(line: str) -> bool:
    """True when the line's own prefix says INFO, DEBUG or WARNING (vLLM, uvicorn, llama.cpp I/W/D)."""
    first = line[:1]
    if first == "(":  # vLLM `(APIServer pid=1) INFO ...` or `(APIServer pid=1) INFO:     ...`
        close = line.find(") ", 0, 64)
        return close > 0 and line.startswith(_QUIET_LEVELS, close + 2)
    if first == "[":  # SGLang uvicorn `[2026-07-20 09:15:12] INFO:     ...`
        close = line.find("] ", 0, 64)
        return close > 0 and line.startswith(("INFO:", "DEBUG:", "WARNING:"), close + 2)
    if first.isdigit():  # llama.cpp `0.00.640.930 I ...`
        space = line.find(" ", 0, 24)
        return space > 0 and line[space + 1 : space + 3] in ("I ", "W ", "D ", "T ")
    return line.startswith(_QUIET_LEVELS)  # old vLLM prefix, bare uvicorn


def classify(message: str, level: str | None) -> ErrorCategory | None:
    """The category of an error message, or None when the message is not an error."""
    if level is not None and level not in _ERROR_LEVELS:
        return None
    text = message.strip()
    if not text or is_frame_line(message):
        return None
    if any(pattern in text for pattern in OOM_PATTERNS) or ("OOM" in text and _OOM_WORD.search(text)):
        return "oom"
    if any(pattern in text for pattern in ENGINE_DEAD_PATTERNS):
        return "engine_dead"
    if any(pattern in text for pattern in SPEC_CONFIG_PATTERNS) or _REMOVED_DRAFT_FLAGS.search(text):
        return "spec_config"
    if _ARGUMENT_ERROR.search(text) and ("spec" in text or "draft" in text):
        return "spec_config"
    if TRACEBACK_START in text:
        return "traceback"
    exception_like = _EXCEPTION_NAME.match(text) is not None and _EXCEPTION_LINE.match(text) is not None
    if (exception_like or _ARGUMENT_ERROR.search(text)) and ("speculative" in text or "draft model" in text):
        return "spec_config"
    if level in _ERROR_LEVELS or exception_like or _ARGUMENT_ERROR.search(text):
        return "other"
    if any(pattern in text for pattern in FLAGGED_TEXT_PATTERNS):
        return "other"
    return None


def is_frame_line(message: str) -> bool:
    """A traceback body line: `  File "...", line N`, source lines, `^^^^` markers, `| ` group lines."""
    return message[:1] in (" ", "\t") or (message[:1] in "^~" and set(message.strip()) <= set("^~ "))
