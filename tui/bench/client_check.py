"""The measuring client checks itself: was spectop, not the server, the bottleneck of a burst?
`LagMonitor` records the event loop's lag and the process's CPU; `ClientCheck` is the verdict per arm."""

from __future__ import annotations

import asyncio
import contextlib
import time
from bisect import bisect_left

from pydantic import BaseModel, ConfigDict, Field

TICK_S = 0.01
MAX_TICKS = 200_000  # about half an hour of ticks; later ones are not recorded (said in the check)
LOOP_LATE_S = 0.05  # a loop lag p99 above this: the client could not keep up with the streams
SEND_LATE_S = 0.25  # closed loop: a request sent this much after its turn
CPU_BUSY_SHARE = 0.9  # of one core: the client itself was the busy part
STREAM_LATE_S = 0.02  # the loop's lag while a coalesced stream arrived that blames the client
REMEDY = (
    "lower --concurrency, give spectop a core of its own (another host, taskset away from the server), "
    "or split the load over several spectop processes"
)


class ClientCheck(BaseModel):
    """Was the measuring client keeping up? (`--json`'s `client_check`)."""

    model_config = ConfigDict(extra="ignore")

    ok: bool
    reason: str | None = Field(None, description="why not, in words")
    remedy: str | None = None
    loop_lag_p99_s: float | None = Field(None, description="how late the event loop's ticker woke, p99")
    loop_lag_max_s: float | None = None
    send_lag_p99_s: float | None = Field(None, description="first attempts, against their turn")
    cpu_share: float | None = Field(None, description="spectop's CPU time over the burst, of one core")
    ticks: int = 0
    coalesced: int = Field(0, description="streams whose chunks reached the client in one burst")
    coalesced_client: int = Field(0, description="... while the client was late")
    coalesced_server: int = Field(0, description="... while the client kept up: the server buffered")
    server_timed: int = Field(0, description="requests whose decode figures are the server's own timing")
    left_out: int = Field(0, description="coalesced requests left out of decode figures (no server timing)")

    def summary(self) -> str:
        """One line: "client OK" or "CLIENT FELL BEHIND: <reason>"."""
        if self.ok:
            return "client check: OK"
        return f"CLIENT FELL BEHIND: {self.reason}; remedy: {self.remedy}"


class LagMonitor:
    """A ticker that measures the event loop's lag, and the process's CPU share, while a burst runs."""

    def __init__(self, t0: float, tick_s: float = TICK_S) -> None:
        self.t0 = t0  # time.perf_counter() of the burst's start: tick times are offsets from it
        self.tick_s = tick_s
        self.times: list[float] = []
        self.lags: list[float] = []
        self.dropped = 0
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = self._wall0 = 0.0
        self._cpu = self._wall = 0.0  # summed over the running stretches (pauses left out)
        self.cpu_share: float | None = None

    def start(self) -> None:
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def pause(self) -> None:
        """Stop measuring while spectop does its own work between rounds (nothing in flight)."""
        await self._halt()

    def resume(self) -> None:
        self.start()

    async def _tick(self) -> None:
        while True:
            expected = time.perf_counter() + self.tick_s
            await asyncio.sleep(self.tick_s)
            now = time.perf_counter()
            if len(self.times) >= MAX_TICKS:
                self.dropped += 1
                continue
            self.times.append(now - self.t0)
            self.lags.append(max(0.0, now - expected))

    async def stop(self) -> None:
        await self._halt()
        if self._wall > 0:
            self.cpu_share = self._cpu / self._wall

    async def _halt(self) -> None:
        if self._task is None:
            return
        self._wall += time.perf_counter() - self._wall0
        self._cpu += time.process_time() - self._cpu0
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def lag_between(self, start_s: float, end_s: float) -> float | None:
        """The largest lag of a tick that woke between `start_s` and a tick after `end_s` (a late tick
        wakes after the time it covers); None: no tick then."""
        if not self.times:
            return None
        first = bisect_left(self.times, start_s)
        last = bisect_left(self.times, end_s + self.tick_s)
        window = self.lags[first : min(last + 1, len(self.lags))]
        return max(window) if window else None

    def p99(self) -> float | None:
        if not self.lags:
            return None
        ordered = sorted(self.lags)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
