"""Server log writers, one per flavour, in the real line formats and cadence (vLLM stats per interval,
SGLang batch lines, llama.cpp per request); buffered and appended by a task so the engine never blocks."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from collections.abc import Callable
from http.client import responses
from pathlib import Path

import aiofiles

from tui.sim.config import SimConfig
from tui.sim.engine import EngineObserver, SimRequest, StepReport
from tui.sim.metrics_sglang import DecodeWindow

MAX_BUFFERED_LINES = 20_000
LoadFn = Callable[[], tuple[int, int, float]]  # running, waiting, KV usage fraction
VLLM_ROUTES = {"/v1/chat/completions": "POST", "/v1/completions": "POST", "/v1/models": "GET",
               "/health": "GET", "/metrics": "GET", "/version": "GET"}  # fmt: skip
VERSIONS = {"vllm": "0.28.0", "sglang": "0.5.15", "llamacpp": "b0-unknown"}


class LogWriter(EngineObserver):
    """Base: buffering and the async flush; flavours format the lines (and set up in `setup`)."""

    def __init__(
        self, path: Path | None, config: SimConfig, load: LoadFn, started: float, interval_s: float
    ) -> None:
        self.path = path
        self.config = config
        self.load = load
        self.started = started
        self.interval_s = interval_s  # vLLM's stats log interval
        self.pid = os.getpid()
        self._buffer: deque[str] = deque(maxlen=MAX_BUFFERED_LINES)
        self._tasks: list[asyncio.Task[None]] = []
        self.setup()

    def setup(self) -> None: ...

    def emit(self, line: str) -> None:
        if self.path is not None:
            self._buffer.append(line)

    async def start(self) -> None:
        if self.path is not None:
            self._tasks.append(asyncio.create_task(self._flush_forever(), name="spectop-sim-log-flush"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.flush()

    async def flush(self) -> None:
        if self.path is None or not self._buffer:
            return
        lines = list(self._buffer)
        self._buffer.clear()
        async with aiofiles.open(self.path, "a", encoding="utf-8", newline="") as handle:
            await handle.write("".join(line + "\n" for line in lines))

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            await self.flush()

    def startup(self, host: str, port: int) -> None: ...

    def ready(self, host: str, port: int) -> None: ...

    def oom(self) -> None: ...

    def uvicorn_line(self, text: str) -> None:
        """vLLM and SGLang serve through uvicorn: its lines, in the flavour's log format."""

    def uvicorn_started(self) -> None:
        for text in (
            f"Started server process [{self.pid}]",
            "Waiting for application startup.",
            "Application startup complete.",
        ):
            self.uvicorn_line(text)

    def oom_gib(self) -> tuple[float, float]:
        """What the drafts tried to allocate and what was free, in GiB of a 140 GiB GPU."""
        free = max(0.01, 140.0 * (1.0 - self.config.gpu_memory_utilization) * 0.5)
        return 140.0 * self.config.draft_memory_need, free

    def shutdown(self) -> None:
        for text in (
            "Shutting down",
            "Waiting for application shutdown.",
            "Application shutdown complete.",
            f"Finished server process [{self.pid}]",
        ):
            self.uvicorn_line(text)

    def access(self, client: str, method: str, path: str, status: int) -> None:
        phrase = f"{status} {responses[status]}" if status in responses else str(status)
        self.uvicorn_line(f'{client} - "{method} {path} HTTP/1.1" {phrase}')


class VllmLogWriter(LogWriter):
    def setup(self) -> None:
        self.engine_pid = self.pid + 1
        self._reset_interval(time.monotonic())
        self._spec_started = self._interval_started
        self._spec = [0, 0, 0]  # drafts, drafted tokens, accepted
        self._spec_pos = [0] * self.config.k
        self._prefix_window: deque[tuple[int, int]] = deque(maxlen=1000)
        self._previous_idle = True

    def _reset_interval(self, now: float) -> None:
        self._interval_started = now
        self._prompt_computed = self._generated = 0

    def line(
        self, message: str, where: str = "loggers.py:310", level: str = "INFO", engine: bool = False
    ) -> None:
        """A line of the API server's process, or (`engine`) of the engine core's."""
        process = f"EngineCore pid={self.engine_pid}" if engine else f"APIServer pid={self.pid}"
        self.emit(f"({process}) {level} {time.strftime('%m-%d %H:%M:%S')} [{where}] {message}")

    async def start(self) -> None:
        await super().start()
        if self.path is not None:
            self._tasks.append(asyncio.create_task(self._stats_forever(), name="spectop-sim-vllm-stats"))

    def startup(self, host: str, port: int) -> None:
        c = self.config
        logo = [
            "",
            "       █     █     █▄   ▄█",
            f" ▄▄ ▄█ █     █     █ ▀▄▀ █  version {VERSIONS['vllm']}",
            f"  █▄█▀ █     █     █     █  model   {c.model}",
            "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
        ]
        for text in [*(text + "\r" for text in logo), ""]:
            self.line(text, "api_utils.py:333")
        args: dict[str, object] = {"model_tag": c.model, "host": host, "port": port, "model": c.model}
        args["max_model_len"] = c.max_model_len
        if c.served_model_name:
            args["served_model_name"] = [c.served_model_name]
        if c.k:
            args["speculative_config"] = {"method": c.spec_method, "num_speculative_tokens": c.k}
        self.line(f"non-default args: {args}", "api_utils.py:272")
        self.line("Resolved architecture: DeepseekV3ForCausalLM", "model.py:672")
        self.line(f"Using max model len {c.max_model_len}", "model.py:1971")
        if c.k > 1:
            self.line(
                "Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP "
                "layer,which may result in lower acceptance rate",
                "speculative.py:975",
                level="WARNING",
            )
        if c.chunked_prefill:
            self.line("Chunked prefill is enabled with max_num_batched_tokens=8192.", "scheduler.py:242")
        spec = f"SpeculativeConfig(method='{c.spec_method}', model='{c.model}', num_spec_tokens={c.k})"
        tokens = c.kv_cache_tokens()
        engine = [
            (
                "core.py:122",
                f"Initializing a V1 LLM engine (v{VERSIONS['vllm']}) with config: model='{c.model}', "
                f"speculative_config={spec if c.k else None}, tokenizer='{c.model}', dtype=torch.bfloat16, "
                f"max_seq_len={c.max_model_len}, tensor_parallel_size={c.tensor_parallel_size}, "
                f"served_model_name={c.model_name}, enable_prefix_caching={c.enable_prefix_caching}, "
                f"enable_chunked_prefill={c.chunked_prefill}",
            ),
            ("gpu_model_runner.py:5424", f"Starting to load model {c.model}..."),
            *([("gpu_model_runner.py:5448", "Loading drafter model...")] if c.k else []),
            ("gpu_worker.py:578", f"Available KV cache memory: {tokens / 7086:.2f} GiB"),
            (
                "kv_cache_utils.py:1916",
                f"GPU KV cache size: {tokens:,} tokens, Maximum concurrency for {c.max_model_len:,} tokens "
                f"per request: {tokens / c.max_model_len:.2f}x",
            ),
        ]
        for where, text in engine:
            self.line(text, where, engine=True)

    def ready(self, host: str, port: int) -> None:
        warmup = "init engine (profile, create kv cache, warmup model) took 1.02 s (compilation: 0.00 s)"
        self.line(warmup, "core.py:347", engine=True)
        self.line("Supported tasks: ['generate']", "api_server.py:544")
        self.line(f"Starting vLLM server on http://{host}:{port}", "api_server.py:548")
        self.line("Available routes are:", "launcher.py:51")
        for route, methods in VLLM_ROUTES.items():
            self.line(f"Route: {route}, Methods: {methods}", "launcher.py:60")
        self.uvicorn_started()
        self._reset_interval(time.monotonic())
        self._spec_started = self._interval_started

    def uvicorn_line(self, text: str) -> None:
        self.emit(f"(APIServer pid={self.pid}) INFO:     {text}")

    def oom(self) -> None:
        c = self.config
        need, free = self.oom_gib()
        for text in (
            "EngineCore failed to start.",
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 1337, '
            "in run_engine_core",
            "    engine_core = EngineCoreProc(*args, **kwargs)",
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {need:.2f} GiB. GPU 0 has a "
            f"total capacity of 139.80 GiB of which {free:.2f} GiB is free. Including non-PyTorch memory, "
            f"this process has {139.80 - free:.2f} GiB memory in use. Of the allocated memory "
            f"{139.80 * c.gpu_memory_utilization:.2f} GiB is allocated by PyTorch.",
        ):
            self.line(text, "core.py:1346", "ERROR", engine=True)
        self.emit(
            f"(APIServer pid={self.pid}) RuntimeError: Engine core initialization failed. See root cause "
            "above. Failed core proc(s): {}"
        )

    def request_scheduled(self, request: SimRequest) -> None:
        self._prefix_window.append((request.prompt_tokens, request.cached_tokens))

    def step_done(self, report: StepReport) -> None:
        self._prompt_computed += sum(request.computed_prompt_tokens for request in report.prefilled)
        self._generated += sum(record.emitted for record in report.records)
        *counts, per_pos = report.drafts(len(self._spec_pos))
        self._spec = [total + count for total, count in zip(self._spec, counts, strict=True)]
        self._spec_pos = [total + count for total, count in zip(self._spec_pos, per_pos, strict=True)]

    async def _stats_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            self.log_stats()

    def log_stats(self) -> None:
        now = time.monotonic()
        elapsed = max(1e-6, now - self._interval_started)
        prompt_tps = self._prompt_computed / elapsed
        gen_tps = self._generated / elapsed
        idle = prompt_tps == 0 and gen_tps == 0
        self._reset_interval(now)
        if idle and self._previous_idle:
            return  # logged at DEBUG by vLLM, so not in an INFO log
        self._previous_idle = idle
        running, waiting, kv_usage = self.load()
        queries = sum(q for q, _ in self._prefix_window)
        hits = sum(h for _, h in self._prefix_window)
        hit_rate = 100.0 * hits / queries if queries else 0.0
        self.line(
            f"Engine 000: Avg prompt throughput: {prompt_tps:.1f} tokens/s, Avg generation throughput: "
            f"{gen_tps:.1f} tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: "
            f"{kv_usage * 100:.1f}%, Prefix cache hit rate: {hit_rate:.1f}%"
        )
        drafts, drafted, accepted = self._spec
        if not drafts:
            return
        spec_elapsed = max(1e-6, now - self._spec_started)  # vLLM resets this clock only after printing
        per_pos = ", ".join(f"{count / drafts:.3f}" for count in self._spec_pos)
        self.line(
            f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
            f"Accepted throughput: {accepted / spec_elapsed:.2f} tokens/s, "
            f"Drafted throughput: {drafted / spec_elapsed:.2f} tokens/s, Accepted: {accepted} tokens, "
            f"Drafted: {drafted} tokens, Per-position acceptance rate: {per_pos}, "
            f"Avg Draft acceptance rate: {100.0 * accepted / drafted:.1f}%",
            where="metrics.py:120",
        )
        self._spec = [0, 0, 0]
        self._spec_pos = [0] * len(self._spec_pos)
        self._spec_started = now


class SglangLogWriter(LogWriter):
    def setup(self) -> None:
        self.window = DecodeWindow()
        self.num_draft_tokens = self.config.num_draft_tokens or self.config.k + 1
        self._last_prefill = time.monotonic()
        self._capacity = self.config.kv_cache_tokens()

    def line(self, message: str, *, scheduler: bool = False) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        prefix = " TP0" if scheduler and self.config.tensor_parallel_size > 1 else ""
        self.emit(f"[{stamp}{prefix}] {message}")

    def startup(self, host: str, port: int) -> None:
        c = self.config
        if c.k and c.max_num_seqs == 48:
            self.line(
                "Max running requests is reset to 48 for speculative decoding. You can override this by "
                "explicitly setting --max-running-requests."
            )
        spec = (
            f"speculative_algorithm='{c.spec_method}', speculative_draft_model_path='{c.model}', "
            f"speculative_num_steps={c.k}, speculative_eagle_topk={c.eagle_topk}, "
            f"speculative_num_draft_tokens={self.num_draft_tokens}, "
            if c.k
            else "speculative_algorithm=None, "
        )
        self.line(
            f"server_args=ServerArgs(model_path='{c.model}', tokenizer_path='{c.model}', host='{host}', "
            f"port={port}, mem_fraction_static={c.gpu_memory_utilization}, "
            f"max_running_requests={c.max_num_seqs}, chunked_prefill_size=8192, "
            f"tp_size={c.tensor_parallel_size}, served_model_name='{c.model_name}', "
            f"enable_metrics=True, decode_log_interval={c.sim.decode_log_interval}, {spec}"
            f"disable_radix_cache={not c.enable_prefix_caching}, ...)"
        )
        scheduler = [
            "Init torch distributed begin.",
            "Init torch distributed ends. elapsed=2.84 s, mem usage=1.02 GB",
            "Load weight begin. avail mem=138.16 GB",
            "Load weight end. elapsed=8.42 s, type=DeepseekV3ForCausalLM, quant=fp8, fmt=e4m3, "
            "avail mem=52.31 GB, mem usage=85.85 GB.",
            f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {self._capacity}, KV size: "
            f"{self._capacity / 15280:.2f} GB",
        ]
        if c.k:
            scheduler += [
                "Load weight begin. avail mem=14.52 GB",
                "Load weight end. elapsed=6.93 s, type=DeepseekV3ForCausalLMNextN, quant=fp8, fmt=e4m3, "
                "avail mem=12.61 GB, mem usage=1.91 GB.",
            ]
        for text in scheduler:
            self.line(text, scheduler=True)

    def ready(self, host: str, port: int) -> None:
        c = self.config
        available = round(84.0 * (1.0 - c.gpu_memory_utilization), 2)
        self.line(
            f"max_total_num_tokens={self._capacity}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests={c.max_num_seqs}, context_len={c.max_model_len}, "
            f"available_gpu_mem={available:.2f} GB",
            scheduler=True,
        )
        self.uvicorn_started()
        self.uvicorn_line(f"Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
        self.line("The server is fired up and ready to roll!")
        self.window.reset(time.monotonic())
        self._last_prefill = time.monotonic()

    def uvicorn_line(self, text: str) -> None:
        self.line(f"INFO:     {text}")

    def oom(self) -> None:
        need, free = self.oom_gib()
        self.line(
            "Capture draft extend CUDA graph begin. backend=full, num_tokens_per_req="
            f"{self.num_draft_tokens}, bs=[1, 2, 4, 8, 16, 32, 48], avail mem={free:.2f} GB",
            scheduler=True,
        )
        self.line("Scheduler hit an exception: Traceback (most recent call last):", scheduler=True)
        self.emit(
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {need:.2f} GiB. "
            f"GPU 0 has a total capacity of 139.80 GiB of which {free:.2f} GiB is free."
        )
        self.emit("")
        self.line("Received sigquit from a child process. It usually means the child failed.")

    def step_done(self, report: StepReport) -> None:
        now, usage = report.end, report.kv_used_tokens / self._capacity
        if report.prefilled:
            new = sum(request.computed_prompt_tokens for request in report.prefilled)
            cached = sum(request.cached_tokens for request in report.prefilled)
            throughput = new / max(1e-6, now - self._last_prefill)
            self._last_prefill = now
            self.line(
                f"Prefill batch, #new-seq: {len(report.prefilled)}, #new-token: {new}, "
                f"#cached-token: {cached}, token usage: {usage:.2f}, "
                f"#running-req: {report.running - len(report.prefilled)}, "
                f"#queue-req: {report.waiting}, #pending-token: 0, cuda graph: False, "
                f"input throughput (token/s): {throughput:.2f}",
                scheduler=True,
            )
        if self.window.add(report) and self.window.iterations % self.config.sim.decode_log_interval == 0:
            spec = ""
            if self.config.k:
                draft_tokens = self.num_draft_tokens
                if self.config.adaptive is not None and report.decode_records:  # the tier in use, + 1
                    draft_tokens = report.decode_records[-1].drafted + 1
                spec = (
                    f"accept len: {self.window.accept_length():.2f}, "
                    f"accept rate: {self.window.accept_rate(draft_tokens):.2f}, "
                )
            self.line(
                f"Decode batch, #running-req: {report.running}, #token: {report.kv_used_tokens}, "
                f"token usage: {usage:.2f}, {spec}cuda graph: True, gen throughput (token/s): "
                f"{self.window.throughput(now):.2f}, #queue-req: {report.waiting}",
                scheduler=True,
            )
            self.window.reset(now)


class LlamacppLogWriter(LogWriter):
    def elapsed(self) -> str:
        us = int((time.monotonic() - self.started) * 1e6)
        return f"{us // 60_000_000}.{(us // 1_000_000) % 60:02d}.{(us // 1000) % 1000:03d}.{us % 1000:03d}"

    def line(self, message: str, level: str = "I") -> None:
        self.emit(f"{self.elapsed()} {level} {message}")

    def startup(self, host: str, port: int) -> None:
        c = self.config
        self.line("srv  llama_server: initializing ...")
        self.line(
            "cmn  common_param: common_params_print_info: verbosity = 3 (adjust with the `-lv N` CLI arg)"
        )
        self.line(f"srv    load_model: loading model '{c.model}'")
        if c.k:
            self.line(f"common_speculative_init_result: loading draft model '{c.model}-draft'")
        n_ctx = c.max_model_len // max(1, c.max_num_seqs)
        self.line(
            f"srv    load_model: initializing, n_slots = {c.max_num_seqs}, n_ctx_slot = {n_ctx}, "
            "kv_unified = 'false'"
        )

    def ready(self, host: str, port: int) -> None:
        self.line("srv  llama_server: model loaded")
        self.line(f"srv  llama_server: listening on http://{host}:{port}")

    def shutdown(self) -> None:
        self.line("srv    operator(): operator(): cleaning up before exit...")

    def access(self, client: str, method: str, path: str, status: int) -> None:
        return None  # llama.cpp logs no access lines

    def oom(self) -> None:
        c = self.config
        mib = 140.0 * 1024 * c.draft_memory_need
        self.line(
            f"ggml_backend_cuda_buffer_type_alloc_buffer: allocating {mib:.2f} MiB on device 0: "
            "cudaMalloc failed: out of memory",
            "E",
        )
        self.line(
            "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
            "E",
        )
        self.line(f"srv    load_model: failed to load draft model, '{c.model}-draft'", "E")
        self.line("main: exiting due to model loading error", "E")

    def request_scheduled(self, request: SimRequest) -> None:
        slot = f"id {request.slot:2d} | task -1 |"
        self.line(f"slot get_availabl: {slot} selected slot by LRU, t_last = -1")
        self.line(
            f"slot launch_slot_: id {request.slot:2d} | task {request.number} | processing task, is_child = 0"
        )

    def request_finished(self, request: SimRequest) -> None:
        if request.first_token_at is None or request.finished_at is None:
            return
        head = f"slot print_timing: id {request.slot:2d} | task {request.number} |"
        prompt_ms = request.prefill_s * 1000
        computed = max(1, request.computed_prompt_tokens)
        gen_ms = (request.finished_at - request.first_token_at) * 1000
        steps = max(1, request.generated - 1)
        self.line(
            f"{head} prompt eval time = {prompt_ms:10.2f} ms / {computed:5d} tokens "
            f"({prompt_ms / computed:8.2f} ms per token, {computed / max(1e-9, prompt_ms) * 1000:8.2f} "
            "tokens per second)"
        )
        self.line(
            f"{head}        eval time = {gen_ms:10.2f} ms / {request.generated:5d} tokens "
            f"({gen_ms / steps:8.2f} ms per token, {steps / max(1e-9, gen_ms) * 1000:8.2f} tokens per second)"
        )
        total = request.prompt_tokens + request.generated
        self.line(f"{head}       total time = {prompt_ms + gen_ms:10.2f} ms / {total:5d} tokens")
        self.line(f"{head}    graphs reused = {max(0, request.verify_steps - 1):10d}")
        if request.drafted:
            rate = request.accepted / request.drafted
            mean = 1 + request.accepted / max(1, request.verify_steps)
            self.line(
                f"{head} draft acceptance = {rate:0.5f} ({request.accepted:5d} accepted / "
                f"{request.drafted:5d} generated), mean len = {mean:5.2f}"
            )
        self.line(
            f"slot      release: id {request.slot:2d} | task {request.number} | stop processing: "
            f"n_tokens = {total - 1}, truncated = 0"
        )


def make_log_writer(
    flavor: str, path: Path | None, config: SimConfig, load: LoadFn, started: float, log_interval_s: float
) -> LogWriter:
    writer = {"vllm": VllmLogWriter, "sglang": SglangLogWriter, "llamacpp": LlamacppLogWriter}[flavor]
    return writer(path, config, load, started, log_interval_s)
