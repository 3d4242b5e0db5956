"""`SimServer`: the simulator as an async context manager on a loopback port, for the CLI and for tests;
`serve_until_signalled` runs one as a process (ready line on stdout, SIGINT/SIGTERM stop, SIGHUP restart)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import sys
import time
from collections.abc import Generator
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from tui.sim.app import build_app
from tui.sim.behaviour import Behaviour
from tui.sim.config import SimConfig, SimConfigError, SimStartupError, load_sim_config
from tui.sim.engine import MetricsRecorder, SimEngine
from tui.sim.faults import FAULT_NAMES, ControlChanges, FaultSettings, KeptControl, parse_changes
from tui.sim.gpu_page import SimGpus
from tui.sim.logs import LogWriter, make_log_writer
from tui.sim.metrics_llamacpp import LlamacppRecorder
from tui.sim.metrics_sglang import SglangRecorder
from tui.sim.metrics_vllm import VllmRecorder
from tui.sim.openai_shapes import FLAVORS
from tui.sim.per_request import ResponseOptions, StepLog


def make_recorder(flavor: str, config: SimConfig, started: float | None = None) -> MetricsRecorder:
    """`started`: the simulated server's start time to keep (vLLM's process_start_time_seconds)."""
    if flavor == "vllm":
        return VllmRecorder(config, started)
    return (SglangRecorder if flavor == "sglang" else LlamacppRecorder)(config)


PROMPT_MIX: tuple[tuple[str, int], ...] = (  # (prompt, typical output tokens)
    ("Implement a thread-safe LRU cache with expiry in Python.\n```python\nclass LRUCache:\n    def "
     "__init__(self, capacity: int, ttl: float) -> None:\n        self.capacity = capacity\n", 192),
    ("Explain how speculative decoding keeps the output of the target model unchanged while drafting "
     "several tokens ahead, and why the acceptance rate matters for throughput.", 160),
    ("Summarise the following meeting notes for a busy manager. The team discussed the launch date, the "
     "budget, the hiring plan and the open risks around the data migration.", 128),
    ("Repeat after me: the quick brown fox jumps over the lazy dog. the quick brown fox jumps over the "
     "lazy dog. the quick brown fox jumps over the lazy dog.", 96),
    ("def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"
     "\n# Rewrite this function iteratively and add type hints.\n", 224),
    ("Write a short story about a lighthouse keeper who discovers that the light has been signalling to "
     "ships that do not exist.", 256),
)  # fmt: skip


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: the owner (CLI or test) decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class SimServer:
    """`async with SimServer(flavor="sglang") as sim:` serves on a free loopback port (`sim.base_url`); other
    keyword arguments are `[sim]` fields over the config file's (`speed=4.0`), None leaves the file's."""

    restart_down_s = 1.0

    def __init__(
        self,
        *,
        flavor: str = "vllm",
        config_path: Path | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        log_path: Path | None = None,
        api_key: str | None = None,
        faults: FaultSettings | None = None,
        gpu: bool = False,
        responses: ResponseOptions | None = None,
        control_file: Path | None = None,
        **behaviour_overrides: Any,
    ) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"flavor {flavor!r}: expected one of {', '.join(FLAVORS)}")
        self.flavor = flavor
        self.config_path = Path(config_path) if config_path is not None else None
        self.host = host
        self.port = port
        self.log_path = Path(log_path) if log_path is not None else None
        self.api_key = api_key
        self.faults = faults or FaultSettings()
        self.responses = responses or ResponseOptions()  # per-request figures in responses
        self.kept_control = KeptControl(control_file)  # ValueError: a file that is not kept changes
        self.overrides = {key: value for key, value in behaviour_overrides.items() if value is not None}
        self.config: SimConfig = load_sim_config(self.config_path, self.overrides)
        self.background_load_rps = self.config.sim.background_load_rps
        # `--gpu`: a DCGM exporter page at /sim/gpu/metrics (kept across restarts: the energy counter)
        self.gpu = SimGpus(self.config, self._load, seed=self.config.sim.seed) if gpu else None
        self.base_url = f"http://{host}:{port}"
        self.rng = random.Random()  # the faults' draws
        self.accepting = False
        self._process_started = time.monotonic()
        self._assemble(self.config)
        self._uvicorn: _Uvicorn | None = None
        self._serve_task: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.running = False

    def _assemble(self, config: SimConfig) -> None:
        """A run's behaviour, engine, log and recorder, made again from the config by every start."""
        self.behaviour = Behaviour.from_config(config)
        self.engine = SimEngine(config, self.behaviour, self.faults, seed=config.sim.seed)
        self.log: LogWriter = make_log_writer(
            self.flavor, self.log_path, config, self._load, self._process_started, config.sim.log_interval_s
        )
        self.recorder = make_recorder(self.flavor, config)
        self.step_log = StepLog() if self.responses.spec_metrics != "none" else None
        self.engine.observers[:] = [self.recorder, self.log, *([self.step_log] if self.step_log else [])]

    # ---- lifecycle ------------------------------------------------------------------------------
    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Read the config, write the start-up log, and listen. Raises `SimStartupError` on a start-up OOM."""
        if self.running:
            return
        self.config = config = load_sim_config(self.config_path, self.overrides)
        sock = self._bind()
        self.port = sock.getsockname()[1]
        self.base_url = f"http://{self.host}:{self.port}"
        self._assemble(config)
        engine, log = self.engine, self.log
        await log.start()
        log.startup(self.host, self.port)
        reason = config.oom_reason()
        if reason is not None:
            sock.close()
            log.oom()
            await log.stop()
            raise SimStartupError(f"CUDA out of memory at start-up: {reason}")
        for body in self.kept_control.bodies:  # the changes made before this restart
            self._apply(parse_changes(body))
        if self.gpu is not None:
            self.gpu.configure(config, self.port)
        engine.start()
        self.accepting = True
        uv_config = uvicorn.Config(
            build_app(self),
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            timeout_keep_alive=5,
        )
        self._uvicorn = _Uvicorn(uv_config)
        self._serve_task = asyncio.create_task(
            self._uvicorn.serve(sockets=[sock]), name="spectop-sim-uvicorn"
        )
        while not self._uvicorn.started:
            if self._serve_task.done():
                await engine.stop()
                await log.stop()
                raise SimStartupError(f"cannot serve on {self.base_url}: {self._serve_task.exception()}")
            await asyncio.sleep(0.01)
        log.ready(self.host, self.port)
        await log.flush()  # tailers see readiness at once
        self._tasks = [
            asyncio.create_task(self._background_load(config.sim.seed), name="spectop-sim-background"),
            asyncio.create_task(self._maintenance(), name="spectop-sim-maintenance"),
        ]
        self.running = True

    async def stop(self) -> None:
        """Stop serving (connections are refused afterwards); in-flight requests end as aborted."""
        if not self.running:
            return
        self.running = self.accepting = False
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.engine.stop()
        if self._uvicorn is not None and self._serve_task is not None:
            self._uvicorn.should_exit = True
            try:
                await asyncio.wait_for(asyncio.shield(self._serve_task), timeout=1.5)
            except TimeoutError:
                self._uvicorn.force_exit = True
                with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                    await asyncio.wait_for(self._serve_task, timeout=1.0)
        self.log.shutdown()
        await self.log.stop()

    async def restart(self, config_path: Path | None = None) -> None:
        """Down for `restart_down_s`, then back with counters reset and the (new) config read."""
        await self.stop()
        if config_path is not None:
            self.config_path = Path(config_path)
        await asyncio.sleep(self.restart_down_s)
        await self.start()

    def _bind(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP: only then does asyncio set TCP_NODELAY on accepted connections (Nagle holds SSE chunks)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as error:
            sock.close()
            raise SimStartupError(
                f"cannot listen on {self.host}:{self.port}: {error.strerror or error}"
            ) from None
        sock.set_inheritable(False)
        return sock

    # ---- runtime control ------------------------------------------------------------------------
    def control(self, **changes: Any) -> dict[str, Any]:
        """Change behaviour at runtime (see `ControlChanges`), kept across restarts; what was applied."""
        parsed = parse_changes(changes)
        try:
            self.kept_control.keep(changes)
        except OSError as error:
            raise ValueError(f"not applied: cannot keep it in {self.kept_control.path}: {error}") from None
        self._apply(parsed)
        return parsed.model_dump(exclude_defaults=True)

    def _apply(self, parsed: ControlChanges) -> None:
        faults = parsed.faults
        fault_changes = faults.model_dump() if isinstance(faults, FaultSettings) else dict(faults or {})
        fault_changes |= {name: value for name in FAULT_NAMES if (value := getattr(parsed, name)) is not None}
        if fault_changes:
            self.faults = self.engine.faults = self.faults.merged(fault_changes)
        if parsed.acceptance is not None:
            self.behaviour.set_acceptance(parsed.acceptance)
        for name in ("speed", "content_effect", "context_half_tokens"):
            if (value := getattr(parsed, name)) is not None:
                setattr(self.behaviour, name, value)
        if parsed.context_ms_per_1k is not None:
            self.behaviour.context_s_per_1k = parsed.context_ms_per_1k / 1000.0
        if parsed.background_load_rps is not None:
            self.background_load_rps = parsed.background_load_rps
        if parsed.reset_counters:
            self.reset_counters()

    def reset_counters(self) -> None:
        """Every counter back to 0, as after a crash-restart the scraper did not notice."""
        self.recorder = make_recorder(self.flavor, self.config, getattr(self.recorder, "started", None))
        self.engine.observers[0] = self.recorder

    async def _maintenance(self) -> None:
        """Once every half second: scheduled counter resets (fault) and idle gauge re-publishing."""
        last_reset = time.monotonic()
        while True:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            every = self.faults.counter_reset_every_s
            if every > 0 and now - last_reset >= every:
                self.reset_counters()
                last_reset = now
            self.recorder.idle_tick(now, len(self.engine.running), len(self.engine.waiting))
            if self.gpu is not None:
                self.gpu.tick(now)

    async def _background_load(self, seed: int) -> None:
        """Requests at `background_load_rps` (Poisson) until cancelled, counted as the HTTP path counts one;
        `error_rate` answers its share with a 500 instead (nobody reads the outboxes)."""
        rng = random.Random(seed ^ 0xB6)
        while True:
            if self.background_load_rps <= 0:
                await asyncio.sleep(0.25)
                continue
            await asyncio.sleep(min(30.0, rng.expovariate(self.background_load_rps)))
            if self.background_load_rps <= 0:
                continue
            prompt, typical = rng.choice(PROMPT_MIX)
            request = self.engine.new_request(
                endpoint="chat",
                prompt_text=prompt,
                max_tokens=max(16, int(rng.gauss(typical, typical / 4))),
                temperature=0.0 if rng.random() < 0.5 else 0.7,
                seed=rng.randrange(1 << 30),
            )
            failed = bool(self.faults.error_rate) and self.rng.random() < self.faults.error_rate
            status = 500 if failed else 200
            self.recorder.http_request("POST", "/v1/chat/completions", status, 512, 0, 0.0)
            self.log.access("127.0.0.1:40000", "POST", "/v1/chat/completions", status)
            if not failed:
                self.engine.submit(request)

    def _load(self) -> tuple[int, int, float]:
        engine = self.engine
        return len(engine.running), len(engine.waiting), engine.kv_used_tokens / engine.kv_capacity_tokens

    @property
    def model(self) -> str:
        return self.config.model_name


PARENT_CHECK_S = 0.5


async def _watch_parent(parent_pid: int, stop: asyncio.Event) -> None:
    """Stop once the process that started us is gone (reparented), even after a SIGKILL of it."""
    while not stop.is_set():
        if os.getppid() != parent_pid:
            print(f"spectop sim: parent process {parent_pid} is gone: stopping", file=sys.stderr, flush=True)
            stop.set()
            return
        await asyncio.sleep(PARENT_CHECK_S)


async def serve_until_signalled(server: SimServer, parent_pid: int | None = None) -> int:
    """Start, print `spectop sim: <flavor> listening on <url>`, serve until SIGINT/SIGTERM (or until
    `parent_pid` is gone); SIGHUP restarts with the config re-read, and a failed restart exits 1."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    outcome = {"code": 0}
    restarting: set[asyncio.Task[None]] = set()

    async def restart() -> None:
        try:
            await server.restart()
        except (SimStartupError, SimConfigError) as error:
            print(f"spectop sim: error: {error}", file=sys.stderr, flush=True)
            outcome["code"] = 1
            stop.set()
            return
        print(f"spectop sim: {server.flavor} restarted on {server.base_url}", flush=True)

    def on_hangup() -> None:
        if not restarting:
            task = asyncio.create_task(restart())
            restarting.add(task)
            task.add_done_callback(restarting.discard)

    await server.start()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, on_hangup)
    print(f"spectop sim: {server.flavor} listening on {server.base_url}", flush=True)
    watchdog = asyncio.create_task(_watch_parent(parent_pid, stop)) if parent_pid else None
    try:
        await stop.wait()
    finally:
        if watchdog is not None:
            watchdog.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        for task in list(restarting):
            task.cancel()
        await server.stop()
    return outcome["code"]
