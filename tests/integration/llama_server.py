"""Start, watch and stop one real `llama-server` process on a free loopback port (and what the vLLM
suite's servers share: the port, the wait for /health, the log's tail)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import httpx

HEALTH_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
# Flags from the reference (§1): drafting needs --spec-type draft-simple besides -md.
DRAFT_FLAGS = (
    "--spec-type", "draft-simple",
    "--spec-draft-n-max", "8", "--spec-draft-n-min", "0", "--spec-draft-p-min", "0.0",
)  # fmt: skip


TAIL_BYTES = 64 * 1024  # the end of a log is all a tail needs; waits read it at every step


class ServerError(RuntimeError):
    """A real server exited, or did not answer /health in time."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - TAIL_BYTES))
            text = log.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def wait_healthy(
    url: str, process: subprocess.Popen[bytes] | None, name: str, log_file: Path, timeout_s: float
) -> None:
    """Until `url` answers /health; ServerError with the log's tail when the process exits first."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=5.0) as client:
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise ServerError(f"{name} exited with {process.returncode}:\n{log_tail(log_file)}")
            try:
                if client.get(f"{url}/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    raise ServerError(f"{name} not healthy after {timeout_s:g} s:\n{log_tail(log_file)}")


def kill_groups(pids: list[int], timeout_s: float = 30.0) -> None:
    """SIGTERM every process group at once, then SIGKILL what is left of them after `timeout_s`."""
    alive = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
            alive.append(pid)
    deadline = time.monotonic() + timeout_s
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if group_alive(pid)]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs. A dead one not yet reaped (our own child, the server,
    is reaped after this wait) does not count: `killpg(pgid, 0)` counts it, and the wait lasted the whole
    timeout after every server had exited."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _parent, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if int(group) == pgid and state != "Z":
            return True
    return False


@dataclass(kw_only=True)
class LoopbackServer:
    """A real server of the suites: its name, work folder (its log there), loopback port and process,
    started in its own process group."""

    name: str
    workdir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    start_timeout_s: ClassVar[float] = HEALTH_TIMEOUT_S
    stop_timeout_s: ClassVar[float] = STOP_TIMEOUT_S

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def output_file(self) -> Path:  # the process's stdout and stderr
        return self.log_file

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def launch(self, port: int | None = None) -> None:
        """Start the process (on `port`, or the previous one, or a free one) without waiting: several
        servers start at once, then `wait_healthy` each."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or self.port or free_port()
        with self.output_file.open("ab") as output:
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                cwd=self.workdir,
                start_new_session=True,
            )

    def wait_healthy(self) -> None:
        wait_healthy(self.url, self.process, self.name, self.output_file, self.start_timeout_s)

    def start(self, port: int | None = None) -> None:
        """Launch and wait for /health; without `port`, another free one if the first was taken."""
        for attempt in range(3):
            self.launch(port)
            try:
                self.wait_healthy()
                return
            except ServerError:
                self.stop()
                if port is not None or attempt == 2:
                    raise
                self.port = 0

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it if it does not exit in time; then reap the process."""
        if self.process is not None:
            kill_groups([self.process.pid], self.stop_timeout_s)
            self.reap()

    def reap(self) -> None:
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=self.stop_timeout_s)


@dataclass(kw_only=True)
class LlamaServer(LoopbackServer):
    """One llama-server: the target model, optionally a draft model, logging to `log_file`."""

    binary: Path
    model: Path
    draft: Path | None

    @property
    def output_file(self) -> Path:
        return self.workdir / f"{self.name}.stderr"

    def environment(self) -> dict[str, str]:
        # LLAMA_TRACE=1 logs every verification step (`accepted 8/ 8 draft tokens`): the tests' step count.
        return {**os.environ, "LLAMA_TRACE": "1"}

    def command(self) -> list[str]:
        draft = ["-md", str(self.draft), *DRAFT_FLAGS] if self.draft is not None else []
        # -t 1: ggml's worker threads spin while they wait, so four servers with -t 2 on a shared 2-core
        # machine starve each other (random draft: ~250 tok/s with -t 1, ~100 with -t 2 under load).
        # -fa off: CPU flash attention accumulates V in f16 along a different path for a 1-token draft step
        # than for a 9-token verification batch; near-ties then flip, and an identical draft stops being 100%.
        return [
            str(self.binary), "-m", str(self.model), *draft, "--host", "127.0.0.1", "--port", str(self.port),
            "--metrics", "--slots", "-c", "2048", "-np", "2", "-t", "1", "-tb", "1", "-fa", "off",
            "--log-file", str(self.log_file),
        ]  # fmt: skip

    def kill(self) -> None:
        """SIGKILL, as a crash would: no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT_S)
