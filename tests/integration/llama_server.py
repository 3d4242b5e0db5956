"""Start, watch and stop one real `llama-server` process on a free loopback port (and what the vLLM
suite's servers share: the port, the wait for /health, the log's tail)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass(kw_only=True)
class LoopbackServer:
    """A real server of the suites: its name, work folder (its log there), loopback port and process."""

    name: str
    workdir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass(kw_only=True)
class LlamaServer(LoopbackServer):
    """One llama-server: the target model, optionally a draft model, logging to `log_file`."""

    binary: Path
    model: Path
    draft: Path | None
    # One thread: ggml's worker threads spin while they wait, so four servers with -t 2 on a shared 2-core
    # machine starve each other (random draft: ~250 tok/s with -t 1, ~100 with -t 2 under load).
    threads: int = 1
    parallel: int = 2
    context: int = 2048
    # LLAMA_TRACE=1 logs every verification step (`accepted 8/ 8 draft tokens`): the tests' exact step count.
    env: dict[str, str] = field(default_factory=lambda: {"LLAMA_TRACE": "1"})
    extra_args: tuple[str, ...] = ()

    @property
    def stderr_file(self) -> Path:
        return self.workdir / f"{self.name}.stderr"

    def command(self) -> list[str]:
        cmd = [str(self.binary), "-m", str(self.model)]
        if self.draft is not None:
            cmd += ["-md", str(self.draft), *DRAFT_FLAGS]
        # -fa off: CPU flash attention accumulates V in f16 along a different path for a 1-token draft step
        # than for a 9-token verification batch; near-ties then flip, and an identical draft stops being 100%.
        cmd += [
            "--host", "127.0.0.1", "--port", str(self.port), "--metrics", "--slots", "-c", str(self.context),
            "-np", str(self.parallel), "-t", str(self.threads), "-tb", str(self.threads), "-fa", "off",
            "--log-file", str(self.log_file), *self.extra_args,
        ]  # fmt: skip
        return cmd

    def start(self, port: int | None = None) -> None:
        """Start the process (on `port`, or the previous one, or a free one) and wait for /health."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(3):
            self.port = port or self.port or free_port()
            stderr = self.stderr_file.open("ab")
            try:
                self.process = subprocess.Popen(
                    self.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=stderr,
                    stderr=stderr,
                    env={**os.environ, **self.env},
                    start_new_session=True,
                )
            finally:
                stderr.close()
            try:
                self.wait_healthy()
                return
            except ServerError:
                self.stop()
                if port is not None or attempt == 2:
                    raise
                self.port = 0  # the free port may have been taken meanwhile: try another

    def wait_healthy(self, timeout_s: float = HEALTH_TIMEOUT_S) -> None:
        wait_healthy(self.url, self.process, self.name, self.stderr_file, timeout_s)

    def kill(self) -> None:
        """SIGKILL, as a crash would: no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT_S)

    def stop(self) -> None:
        """Terminate, then kill if it does not exit in time."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()

    def restart(self) -> None:
        self.stop()
        self.start(port=self.port)
