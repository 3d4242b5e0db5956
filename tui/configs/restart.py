"""Run an endpoint's restart command (no shell) and wait for its /health to answer again.

Every wait has a timeout (HEALTH_TIMEOUT_S by default); when the server does not come back,
`last_errors` picks the error lines of the endpoint's log (a CUDA OOM, a dead engine) to show why.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tui.sanitize import safe_line
from tui.telemetry.events import ErrorEvent
from tui.telemetry.logs import LogParser

MAX_OUTPUT_LINE = 2000
RESTART_TIMEOUT_S = 300.0
HEALTH_TIMEOUT_S = 30.0
LOG_TAIL_BYTES = 256 * 1024  # how much of the end of a log `last_errors` reads


async def run_restart(
    argv: list[str], on_line: Callable[[str], object], *, timeout_s: float = RESTART_TIMEOUT_S
) -> int:
    """Run `argv` without a shell, passing each output line (stdout+stderr) to `on_line`.

    Returns the exit code. Raises OSError when the program cannot be started and
    TimeoutError after `timeout_s` (the process is killed). Cancelling kills it too.
    """
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
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
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 5.0)


async def wait_for_health(
    client: httpx.AsyncClient,
    url: str,
    on_poll: Callable[[bool, str, float], None],
    *,
    timeout_s: float = HEALTH_TIMEOUT_S,
    interval_s: float = 1.0,
    request_timeout_s: float = 3.0,
) -> bool:
    """Poll `url` until it answers 2xx (True) or `timeout_s` passes (False)."""
    started = time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        try:
            response = await client.get(url, timeout=request_timeout_s)
            back = 200 <= response.status_code < 300
            detail = f"HTTP {response.status_code}"
        except httpx.HTTPError as error:
            back, detail = False, type(error).__name__
        on_poll(back, detail, elapsed)
        if back:
            return True
        if elapsed + interval_s > timeout_s:
            return False
        await asyncio.sleep(interval_s)


def last_errors(path: Path, count: int = 5, *, start: int = 0) -> list[str]:
    """The last `count` error messages (OOM, dead engine, tracebacks, ERROR lines) of the log at `path`
    from byte `start` on (only its last LOG_TAIL_BYTES are read); [] when there are none or no file."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, 2)
            if start > size:
                start = 0  # the log was rotated or truncated since
            offset = max(start, size - LOG_TAIL_BYTES)
            file.seek(offset)
            data = file.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    if offset > start and lines:
        lines = lines[1:]  # the first line read is cut
    parser = LogParser()
    events = [event for line in lines for event in parser.feed_guarded(line)] + parser.flush()
    messages: list[str] = []
    for event in events:
        if isinstance(event, ErrorEvent):
            message = safe_line(event.message or event.line)[:MAX_OUTPUT_LINE]  # a log line: untrusted
            if message and message not in messages[-1:]:
                messages.append(message)
    return messages[-count:]
