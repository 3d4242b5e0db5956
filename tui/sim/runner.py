"""Running a `SimServer` as a process: ready line on stdout, SIGINT/SIGTERM stop, SIGHUP restart."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tui.sim.config import SimConfigError, SimStartupError
from tui.sim.server import SimServer

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
    """Start, print `spectop sim: <flavor> listening on <url>`, and serve until SIGINT/SIGTERM.

    SIGHUP re-reads the config file and restarts (a simulated restart); a restart that fails like a
    start-up (OOM) ends the process with exit code 1. Raises `SimStartupError` if the first start fails.
    With `parent_pid` (`--parent-pid`, which `spectop demo` passes) it also stops when that process is
    no longer its parent: the demo's sims never outlive it, whatever killed it.
    """
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
