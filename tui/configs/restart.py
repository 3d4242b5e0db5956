"""Run an endpoint's restart command (no shell) and wait for its /health to answer again."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import httpx

MAX_OUTPUT_LINE = 2000
RESTART_TIMEOUT_S = 300.0


async def run_restart(
    argv: list[str], on_line: Callable[[str], None], *, timeout_s: float = RESTART_TIMEOUT_S
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
    assert process.stdout is not None

    async def pump() -> None:
        while True:
            try:
                line = await process.stdout.readline()
            except ValueError:  # a line over the stream limit: read what is there
                line = await process.stdout.read(MAX_OUTPUT_LINE)
            if not line:
                return
            on_line(line.decode("utf-8", "replace").rstrip("\r\n")[:MAX_OUTPUT_LINE])

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
    timeout_s: float = 180.0,
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
