"""Run an endpoint's restart command (no shell) and wait for its /health to answer again.
A restart command may return before the old process has stopped, so `wait_for_health` given the
server's process identity (`read_identity`) counts it back only when a new process answers."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

import httpx

from tui.sanitize import safe_line
from tui.telemetry.backends import BACKENDS
from tui.telemetry.events import ErrorEvent
from tui.telemetry.logs import LogParser
from tui.telemetry.logs.startup import is_process_start
from tui.telemetry.scraper import scrape_metrics

MAX_OUTPUT_LINE = 2000
RESTART_TIMEOUT_S = 300.0
HEALTH_TIMEOUT_S = 30.0
HEALTH_REQUEST_TIMEOUT_S = 3.0  # one /health request
LOG_TAIL_BYTES = 256 * 1024  # how much of the end of a log `last_errors` reads


def restart_command_problem(argv: Sequence[str]) -> str | None:
    """Why `argv` cannot be run (None: it can), found before anything is changed."""
    if not argv:
        return "empty"
    program = argv[0]
    if os.sep not in program:
        if shutil.which(program) is not None:
            return None
        return (
            f"{program}: no such program on PATH (the command runs without a shell: for a pipe, "
            "`&&` or a shell builtin, give sh -c '...')"
        )
    path = Path(program)
    if not path.exists():
        return f"{program}: no such file"
    if path.is_dir() or not os.access(path, os.X_OK):
        return f"{program}: not executable (chmod +x, or give the interpreter first: sh {program})"
    return None


async def run_restart(
    argv: list[str], on_line: Callable[[str], object], *, timeout_s: float = RESTART_TIMEOUT_S
) -> int:
    """Run `argv` without a shell, each output line to `on_line`; the exit code (OSError, TimeoutError)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    stdout = process.stdout
    assert stdout is not None

    async def pump() -> None:
        while True:
            try:
                line = await stdout.readline()
            except ValueError:  # a line over the stream limit: read what is there
                line = await stdout.read(MAX_OUTPUT_LINE)
            if not line:
                return
            # The command's output is untrusted (it may relay the server's log): made safe for a terminal.
            on_line(safe_line(line.decode("utf-8", "replace").rstrip("\r\n")[:MAX_OUTPUT_LINE]))

    try:
        async with asyncio.timeout(timeout_s):
            await pump()
            return await process.wait()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(TimeoutError, ProcessLookupError):  # killed: reaped, or left to init
                await asyncio.wait_for(process.wait(), 5.0)


@dataclass(frozen=True)
class ServerIdentity:
    """Which process serves an endpoint: what its /metrics page says changes on a restart."""

    metrics_url: str
    restart_marker: float | None  # process_start_time_seconds or a `_created` stamp (backend's choice)
    process_start: str | None  # llama.cpp's Process-Start-Time-Unix header

    @property
    def known(self) -> bool:
        return self.restart_marker is not None or self.process_start is not None

    def differs_from(self, other: ServerIdentity) -> bool:
        """True when `other` is certainly another process (a figure both pages have changed)."""
        old, new = self.restart_marker, other.restart_marker
        if old is not None and new is not None and not math.isclose(old, new, rel_tol=0, abs_tol=1e-3):
            return True
        if self.process_start is not None and other.process_start is not None:
            return self.process_start != other.process_start
        return False


async def read_identity(
    client: httpx.AsyncClient, metrics_url: str, *, timeout_s: float = 3.0
) -> ServerIdentity | None:
    """The identity of the process answering `metrics_url`; None when it does not answer a page."""
    scrape = await scrape_metrics(client, metrics_url, timeout_s=timeout_s)
    if scrape.samples is None:
        return None
    backend = BACKENDS.get(scrape.backend) if scrape.backend else None
    marker = backend.extract(scrape.samples).restart_marker if backend is not None else None
    return ServerIdentity(metrics_url, marker, scrape.process_start)


OLD_PROCESS = "the old process still answers"
START_FAILURE_QUIET_S = 30.0
# Error classes that end a start-up; "other" (a retried download, a warning-like ERROR line) does not.
_FATAL = ("oom", "engine_dead", "spec_config", "traceback")


@dataclass
class StartFailureWatch:
    """Tells a server that died while starting (a fatal log line after the new process's first line, then
    `quiet_s` of quiet while /health does not answer) from one still starting, so a failed start costs no
    health timeout. Errors before that first line are the old process's shutdown: they never count (a log
    with no line known to start a process falls back to the health timeout)."""

    path: Path
    offset: int  # where the restart found the log's end
    _: KW_ONLY
    quiet_s: float = START_FAILURE_QUIET_S
    clock: Callable[[], float] = time.monotonic
    parser: LogParser = field(default_factory=LogParser, init=False)
    errors: list[str] = field(default_factory=list, init=False)
    started: bool = field(default=False, init=False)
    reason: str | None = field(default=None, init=False)
    _partial: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.grew_at = self.clock()

    def _take(self, events: Sequence[object]) -> None:
        if self.started:
            _add_errors(self.errors, events, _FATAL)

    def poll(self) -> str | None:
        """The reason when the server has certainly died since the restart, else None (blocking IO)."""
        try:
            data, self.offset, _cut = _read_tail(self.path, self.offset)
        except OSError:
            return None
        now = self.clock()
        if data:
            self.grew_at = now
            text = self._partial + data.decode("utf-8", "replace")
            *lines, self._partial = text.split("\n")
            for line in lines:
                self._take(self.parser.feed_guarded(line))  # events it ends belong before it
                if is_process_start(line):
                    self.started = True
                    self.errors.clear()  # a process that starts again (a supervisor's retry) is judged anew
            return None
        if now - self.grew_at < self.quiet_s:
            return None
        if self._partial:
            self._take(self.parser.feed_guarded(self._partial))
            self._partial = ""
        self._take(self.parser.flush())
        if self.errors:
            self.reason = "it died while starting: " + " | ".join(self.errors[-3:])
        return self.reason


async def wait_for_health(
    client: httpx.AsyncClient,
    url: str,
    on_poll: Callable[[bool, str, float], None],
    *,
    timeout_s: float = HEALTH_TIMEOUT_S,
    interval_s: float = 1.0,
    before: ServerIdentity | None = None,
    died: Callable[[], Awaitable[str | None]] | None = None,
) -> bool:
    """Poll `url` until it answers 2xx (True) or `timeout_s` passes (False). With `before`, a 2xx counts only
    from a new process (/health failed since, or the identity changed); `died` can end the wait at once."""
    started = time.monotonic()
    went_down = before is None or not before.known
    while True:
        elapsed = time.monotonic() - started
        try:
            response = await client.get(url, timeout=HEALTH_REQUEST_TIMEOUT_S)
            back = 200 <= response.status_code < 300
            detail = f"HTTP {response.status_code}"
        except httpx.HTTPError as error:
            back, detail = False, type(error).__name__
        if not back:
            went_down = True
        elif not went_down and before is not None:
            now = await read_identity(client, before.metrics_url, timeout_s=HEALTH_REQUEST_TIMEOUT_S)
            if now is not None and not now.known:
                went_down = True  # the new page carries no identity: nothing to compare
            elif now is None or not before.differs_from(now):
                back, detail = False, f"{detail}, {OLD_PROCESS}"
        if not back and died is not None and OLD_PROCESS not in detail:
            reason = await died()
            if reason is not None:
                on_poll(False, reason, elapsed)
                return False
        on_poll(back, detail, elapsed)
        if back:
            return True
        if elapsed + interval_s > timeout_s:
            return False
        await asyncio.sleep(interval_s)


def _read_tail(path: Path, start: int) -> tuple[bytes, int, bool]:
    """The log's bytes from `start` (from 0 when it is shorter: rotated or truncated), at most the last
    LOG_TAIL_BYTES of them; its size; whether the read began after `start` (mid-line). OSError."""
    with path.open("rb") as file:
        size = file.seek(0, 2)
        start = 0 if start > size else start
        offset = max(start, size - LOG_TAIL_BYTES)
        file.seek(offset)
        return file.read(), size, offset > start


def last_errors(path: Path, count: int = 5, *, start: int = 0) -> list[str]:
    """The last `count` error messages of the log at `path` from byte `start` on ([] when none)."""
    try:
        data, _size, cut = _read_tail(path, start)
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    if cut and lines:
        lines = lines[1:]  # the first line read is cut
    parser = LogParser()
    messages: list[str] = []
    _add_errors(messages, [event for line in lines for event in parser.feed_guarded(line)] + parser.flush())
    return messages[-count:]


def _add_errors(
    messages: list[str], events: Sequence[object], categories: Sequence[str] | None = None
) -> None:
    """The error events' messages (of `categories` only, when given), each once in a row."""
    for event in events:
        if isinstance(event, ErrorEvent) and (categories is None or event.category in categories):
            message = safe_line(event.message or event.line)[:MAX_OUTPUT_LINE]  # a log line: untrusted
            if message and message not in messages[-1:]:
                messages.append(message)
