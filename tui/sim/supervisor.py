"""The demo's process supervisor: starts `spectop sim` children, reaps a dead one at once (saying why, from
its log), and restarts one on request over a Unix socket (SIGHUP when alive, a new process when dead)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tui.configs.restart import last_errors
from tui.format import fmt_setting
from tui.sanitize import safe_line

if TYPE_CHECKING:
    from tui.settings import EndpointSettings

LISTENING = re.compile(r"listening on (http://\S+)")
RESTARTED = "restarted on "
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
WATCH_INTERVAL_S = 0.2
CONTROL_SOCKET = "control.sock"
FOLDER_PREFIX = "spectop-demo-"
PID_FILE = "demo.pid"  # the demo that owns the folder; a dead owner's folder is removed by the next demo
KEPT_FILE = "KEPT"  # --keep: the folder stays until the user removes it


class DemoError(Exception):
    """A simulator that did not start; the message says which and why."""


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@dataclass
class DemoSim:
    """One simulator: its files and its current process (a new one after a restart from dead)."""

    name: str
    config: Path
    log_file: Path
    stdout_path: Path
    stderr_path: Path
    control_file: Path  # the /sim/control changes, kept across restarts (`spectop sim --control-file`)
    process: subprocess.Popen[bytes] | None = None
    url: str = ""
    log_start: int = 0  # where the current run's lines start in the log
    exit_noticed: bool = False
    restarting: bool = False

    @classmethod
    def in_folder(cls, name: str, config: Path, folder: Path) -> DemoSim:
        """A sim whose log, outputs and kept /sim/control changes are files NAME.* in `folder`."""
        log, stdout, stderr, control = (
            folder / f"{name}.{kind}" for kind in ("log", "stdout", "stderr", "control.json")
        )
        return cls(name, config, log, stdout, stderr, control)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def why_it_exited(self) -> str:
        """The exit code and the error lines the run left in its log (or its stderr)."""
        assert self.process is not None
        errors = last_errors(self.log_file, 3, start=self.log_start)
        if not errors:
            stderr = _read(self.stderr_path).strip().splitlines()
            errors = [safe_line(line) for line in stderr[-1:]] or ["no error in its log"]
        return f"exited with code {self.process.returncode}: " + " | ".join(errors)

    def kept_control(self) -> str:
        """The /sim/control changes a restart kept, as posted ("" when none)."""
        bodies = _read(self.control_file).strip()
        return f"{self.name}: /sim/control changes kept: {safe_line(bodies)}" if bodies else ""


@dataclass
class DemoSims:
    folder: Path
    background_load_rps: float = 1.5
    sims: list[DemoSim] = field(default_factory=list)
    endpoints: list[EndpointSettings] = field(default_factory=list)
    on_exit: Callable[[str], None] | None = None  # told "NAME: exited with code …" once per death
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _server: socketserver.BaseServer | None = None

    @property
    def processes(self) -> list[subprocess.Popen[bytes]]:
        return [sim.process for sim in self.sims if sim.process is not None]

    # --- starting -----------------------------------------------------------------------------------------

    def start(self, sim: DemoSim, port: int = 0) -> None:
        """Start `sim` (on `port`, 0 for a free one) and wait for its 'listening on'; DemoError if not."""
        command = [
            sys.executable, "-m", "tui", "sim", "--flavor", "vllm", "--port", str(port),
            "--config", str(sim.config), "--log-file", str(sim.log_file),
            "--control-file", str(sim.control_file),  # a restart from dead keeps the /sim/control changes
            "--background-load", f"{self.background_load_rps:g}", "--gpu",
            # Per-request figures, as a vLLM started with these flags sends them (spectop bench reads them).
            "--per-request-spec-decode-metrics", "summary", "--enable-per-request-metrics",
            "--enable-prompt-tokens-details",
            "--parent-pid", str(os.getpid()),  # the sim stops when the demo is gone, even after a SIGKILL
        ]  # fmt: skip
        sim.log_start = _size(sim.log_file)
        with sim.stdout_path.open("wb") as stdout, sim.stderr_path.open("wb") as stderr:
            process = subprocess.Popen(
                command, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True
            )
        with self._lock:
            sim.process, sim.exit_noticed = process, False
            stopping = self._stopping.is_set()
        if stopping:  # quit during a restart: stop() may have missed this one
            _end(process)
            raise DemoError(f"simulator {sim.name}: not started, the demo is stopping")
        sim.url = _wait_for_url(sim)

    def watch(self) -> None:
        """Reap dead sims at once and report each death; the control socket takes restart requests."""
        server = _ControlServer(str(self.folder / CONTROL_SOCKET), _ControlHandler)
        server.sims = self
        self._server = server
        for target in (server.serve_forever, self._watch_loop):
            thread = threading.Thread(target=target, name=f"demo-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def restart_command(self, name: str) -> list[str]:
        control = str(self.folder / CONTROL_SOCKET)
        return [sys.executable, "-m", "tui.commands.demo", "restart", control, name]  # runs restart_client

    def _watch_loop(self) -> None:
        while not self._stopping.wait(WATCH_INTERVAL_S):
            for message in self.check():
                if self.on_exit is not None:
                    with contextlib.suppress(Exception):  # the dashboard may be closing
                        self.on_exit(message)

    def check(self) -> list[str]:
        """Poll every sim (which reaps an exited one); one message per death not reported yet."""
        messages = []
        with self._lock:
            for sim in self.sims:
                if sim.process is None or sim.exit_noticed or sim.alive:
                    continue
                sim.exit_noticed = True
                messages.append(f"{sim.name}: the simulator {sim.why_it_exited()}")
        return messages

    # --- restarting (from the control socket) -------------------------------------------------------------

    def restart(self, name: str, say: Callable[[str], None]) -> bool:
        """Restart sim `name`; `say` gets progress lines. True once it serves again."""
        sim = next((sim for sim in self.sims if sim.name == name), None)
        if sim is None:
            say(f"no demo simulator named {name!r}")
            return False
        with self._lock:
            if sim.restarting:
                say(f"{name}: a restart is already under way")
                return False
            sim.restarting = True
        try:
            back = self._restart(sim, say)
        finally:
            with self._lock:
                sim.restarting = False
        if back and (kept := sim.kept_control()):
            say(kept)
        return back

    def _restart(self, sim: DemoSim, say: Callable[[str], None]) -> bool:
        port = int(sim.url.rsplit(":", 1)[1]) if sim.url else 0
        if sim.alive:
            assert sim.process is not None
            restarts_before = _read(sim.stdout_path).count(RESTARTED)
            sim.log_start = _size(sim.log_file)
            say(f"{sim.name}: sending SIGHUP to pid {sim.process.pid} (re-reads {sim.config.name})")
            sim.process.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                if _read(sim.stdout_path).count(RESTARTED) > restarts_before:
                    say(f"{sim.name}: restarted on {sim.url}")
                    return True
                if not sim.alive:
                    say(f"{sim.name}: the simulator {sim.why_it_exited()}")
                    say("fix the config and save & restart again: the demo starts it again")
                    return False
                time.sleep(0.05)
            say(f"{sim.name}: not back within {fmt_setting(START_TIMEOUT_S)} s")
            return False
        if sim.process is not None:
            say(f"{sim.name}: the simulator had {sim.why_it_exited()}")
        say(f"{sim.name}: starting it again on port {port}")
        try:
            self.start(sim, port)
        except DemoError as error:
            say(str(error) if sim.alive else f"{sim.name}: the simulator {sim.why_it_exited()}")
            return False
        assert sim.process is not None
        say(f"{sim.name}: started again as pid {sim.process.pid}, listening on {sim.url}")
        return True

    # --- stopping -----------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the watcher, terminate every sim, wait, kill what is left. Safe to call twice."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for thread in self._threads:
            thread.join(timeout=STOP_TIMEOUT_S)
        self._threads.clear()
        with self._lock:
            processes = self.processes
        for process in processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in processes:
            _end(process, max(0.1, deadline - time.monotonic()))


def _end(process: subprocess.Popen[bytes], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Terminate (if still running), wait up to `timeout_s`, then kill; the process is reaped."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class _ControlServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    sims: DemoSims


class _ControlHandler(socketserver.StreamRequestHandler):
    """One request line `restart NAME`; answers progress lines, then `ok` or `failed`."""

    def handle(self) -> None:
        server = self.server
        assert isinstance(server, _ControlServer)
        request = self.rfile.readline(200).decode("utf-8", "replace").split()

        def say(line: str) -> None:
            self.wfile.write((line.replace("\n", " ") + "\n").encode("utf-8"))
            self.wfile.flush()

        if len(request) == 2 and request[0] == "restart":
            say("ok" if server.sims.restart(request[1], say) else "failed")
        else:
            say("unknown request (expected: restart NAME)")
            say("failed")


def restart_client(control: str, name: str) -> int:
    """The demo endpoints' restart command: ask the demo to restart `name`; 0 once it serves again."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(START_TIMEOUT_S + 10)
            connection.connect(control)
            connection.sendall(f"restart {name}\n".encode())
            last = ""
            for raw in connection.makefile("rb"):
                last = raw.decode("utf-8", "replace").rstrip("\n")
                if last not in ("ok", "failed"):
                    print(safe_line(last), flush=True)  # may quote the sim's log or stderr
    except OSError as error:
        print(f"cannot reach the demo at {control}: {error.strerror or error} (is `spectop demo` running?)")
        return 1
    return 0 if last == "ok" else 1


def _wait_for_url(sim: DemoSim) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    process = sim.process
    assert process is not None
    while time.monotonic() < deadline:
        match = LISTENING.search(_read(sim.stdout_path))
        if match:
            return match.group(1)
        if process.poll() is not None:
            error = _read(sim.stderr_path).strip()[-2000:]
            raise DemoError(
                f"simulator {sim.name} exited with code {process.returncode}: {error or 'no output'}"
            )
        time.sleep(0.05)  # startup only, before any event loop runs
    raise DemoError(
        f"simulator {sim.name} did not say 'listening on' within {fmt_setting(START_TIMEOUT_S)} s"
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(0.5)
        try:
            connection.connect(str(path))
        except OSError:
            return False
    return True


def _abandoned(folder: Path, now: float) -> bool:
    """A demo folder whose demo is gone (killed before its cleanup ran) and that was not kept."""
    if (folder / KEPT_FILE).exists():
        return False
    try:
        return not _pid_alive(int((folder / PID_FILE).read_text(encoding="utf-8").strip()))
    except (OSError, ValueError):  # a folder of an older spectop: no pid file
        pass
    if _socket_answers(folder / CONTROL_SOCKET):
        return False
    try:
        return now - folder.stat().st_mtime > 3 * START_TIMEOUT_S  # not one that is starting right now
    except OSError:
        return False


def clean_old_folders(base: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the `spectop-demo-*` folders of demos that are gone; the folders removed."""
    base = Path(base or tempfile.gettempdir())
    now = time.time() if now is None else now
    removed = []
    for folder in sorted(base.glob(FOLDER_PREFIX + "*")):
        with contextlib.suppress(OSError):
            if folder.is_dir() and folder.stat().st_uid == os.getuid() and _abandoned(folder, now):
                shutil.rmtree(folder)
                removed.append(folder)
    return removed
