"""`spectop demo`: two simulated vLLM servers (MTP on, MTP off) and the dashboard on them.

The sims are `spectop sim` subprocesses on free loopback ports, started from copies of the
sample configs in a temporary folder (so edits from the dashboard never touch the repository),
with their logs in that folder and a gentle background load. Each endpoint's restart command is
`kill -HUP <pid>` (the sim re-reads its config on SIGHUP). Quitting stops everything it started.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tui.commands.replay import add_record_max_mb_argument
from tui.paths import sample_configs_dir
from tui.settings import EndpointSettings, Settings
from tui.sim.gpu_page import GPU_METRICS_PATH

LISTENING = re.compile(r"listening on (http://\S+)")
DEMO_ENDPOINTS = (("mtp-on", "config.toml"), ("mtp-off", "config_mtp_off.toml"))
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0


class DemoError(Exception):
    """A simulator that did not start; the message says which and why."""


@dataclass
class DemoSims:
    folder: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    endpoints: list[EndpointSettings] = field(default_factory=list)

    def stop(self) -> None:
        """Terminate every sim, wait, kill what is left. Safe to call twice."""
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "demo",
        help="two simulated vLLM servers (MTP on / off) and the dashboard on them",
        description="Start two simulated vLLM servers from the sample configs (MTP on with k=2, MTP off) "
        "on free loopback ports with a gentle background load, and open the dashboard on them. "
        "Quitting stops the simulators.",
    )
    parser.add_argument(
        "--background-load", type=float, default=1.5, metavar="RPS", help="requests/s per sim (default 1.5)"
    )
    parser.add_argument("--poll-interval", type=float, default=1.0, metavar="S", help="default 1 s")
    parser.add_argument("--record", metavar="FILE", help="append every scrape and log event as JSON lines")
    add_record_max_mb_argument(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, configs)")
    parser.set_defaults(func=run)


def _wait_for_url(process: subprocess.Popen[bytes], stdout_path: Path, stderr_path: Path, name: str) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = stdout_path.read_text(encoding="utf-8", errors="replace") if stdout_path.exists() else ""
        match = LISTENING.search(text)
        if match:
            return match.group(1)
        if process.poll() is not None:
            error = stderr_path.read_text(encoding="utf-8", errors="replace").strip()[-2000:]
            raise DemoError(f"simulator {name} exited with code {process.returncode}: {error or 'no output'}")
        time.sleep(0.05)  # startup only, before any event loop runs
    raise DemoError(f"simulator {name} did not say 'listening on' within {START_TIMEOUT_S:.0f} s")


def start_sims(folder: Path, background_load_rps: float = 1.5) -> DemoSims:
    """Start the demo sims in `folder`; on any failure, stop the ones already started and raise."""
    sims = DemoSims(folder)
    try:
        for name, config_name in DEMO_ENDPOINTS:
            config = folder / config_name
            shutil.copyfile(sample_configs_dir() / config_name, config)
            log_file = folder / f"{name}.log"
            stdout_path = folder / f"{name}.stdout"
            stderr_path = folder / f"{name}.stderr"
            command = [
                sys.executable, "-m", "tui", "sim", "--flavor", "vllm", "--port", "0",
                "--config", str(config), "--log-file", str(log_file),
                "--background-load", f"{background_load_rps:g}", "--gpu",
            ]  # fmt: skip
            with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
                process = subprocess.Popen(
                    command, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True
                )
            sims.processes.append(process)
            url = _wait_for_url(process, stdout_path, stderr_path, name)
            sims.endpoints.append(
                EndpointSettings(
                    name=name,
                    url=url,
                    gpu_metrics_url=url + GPU_METRICS_PATH,
                    backend="vllm",
                    log_file=log_file,
                    config_file=config,
                    restart_command=["kill", "-HUP", str(process.pid)],
                )
            )
    except BaseException:
        sims.stop()
        raise
    return sims


@contextlib.contextmanager
def demo_sims(background_load_rps: float = 1.5, keep: bool = False) -> Iterator[DemoSims]:
    folder = Path(tempfile.mkdtemp(prefix="spectop-demo-"))
    sims: DemoSims | None = None
    try:
        sims = start_sims(folder, background_load_rps)
        yield sims
    finally:
        if sims is not None:
            sims.stop()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    if args.background_load < 0 or args.poll_interval <= 0:
        print("spectop demo: --background-load must be >= 0 and --poll-interval > 0")
        return 2
    print("spectop demo: starting two simulated vLLM servers …", flush=True)
    # SIGTERM or SIGHUP (a closing SSH session) must still run the cleanup below.
    previous = {number: signal.signal(number, _interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with demo_sims(args.background_load, keep=args.keep) as sims:
            from tui.app import SpectopApp

            settings = Settings(poll_interval_s=args.poll_interval, endpoints=sims.endpoints)
            app = SpectopApp(settings=settings, record_path=args.record, record_max_mb=args.record_max_mb)
            app.run()
            if args.keep:
                print(f"spectop demo: logs and configs kept in {sims.folder}")
            return app.return_code or 0
    except DemoError as error:
        print(f"spectop demo: {error}")
        return 1
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
