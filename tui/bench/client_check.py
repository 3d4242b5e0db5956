"""The measuring client checks itself: loop lag and CPU (`LagMonitor`), coalesced streams, a verdict."""

from __future__ import annotations

import asyncio
import contextlib
import time
from bisect import bisect_left
from collections.abc import Sequence

from tui.bench.results import ClientCheck, RequestResult
from tui.bench.stats import percentile
from tui.format import fmt_count, fmt_latency, fmt_rate

TICK_S = 0.01
MAX_TICKS = 200_000  # about half an hour of ticks; later ones are not recorded (said in the check)
LOOP_LATE_S = 0.05  # a loop lag p99 above this: the client could not keep up with the streams
SEND_LATE_S = 0.25  # closed loop: a request sent this much after its turn
CPU_BUSY_SHARE = 0.9  # of one core: the client itself was the busy part
COALESCED_GAP_S = 0.0003
MIN_CHUNKS = 4
SERVER_PACE_FACTOR = 1.5
STREAM_LATE_S = 0.02  # the loop's lag while a coalesced stream arrived that blames the client
REMEDY = (
    "lower --concurrency, give spectop a core of its own (another host, taskset away from the server), "
    "or split the load over several spectop processes"
)


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
        await self.pause()
        if self._wall > 0:
            self.cpu_share = self._cpu / self._wall

    async def pause(self) -> None:
        """Stop measuring (`start` measures again): spectop's own work between rounds, nothing in flight."""
        if self._task is None:
            return
        self._wall += time.perf_counter() - self._wall0
        self._cpu += time.process_time() - self._cpu0
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    def lag_between(self, start_s: float, end_s: float) -> float | None:
        """The largest lag of a tick that woke between `start_s` and a tick after `end_s` (None: no tick)."""
        if not self.times:
            return None
        first = bisect_left(self.times, start_s)
        last = bisect_left(self.times, end_s + self.tick_s)
        window = self.lags[first : min(last + 1, len(self.lags))]
        return max(window) if window else None

    def p99(self) -> float | None:
        ordered = sorted(self.lags)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else None


def is_coalesced(result: RequestResult) -> bool:
    if not result.ok:
        return False
    gap = result.chunk_gap_s
    if len(result.chunk_times_s) >= MIN_CHUNKS and gap is not None and gap < COALESCED_GAP_S:
        return True
    client = result.client_decode_sample()
    server = result.server.decode_rate(result.output_tokens) if result.server else None
    return bool(client and server and client[0] / client[1] > SERVER_PACE_FACTOR * server)


def _late_enough(result: RequestResult) -> float:
    """How late the client must have been to read this stream at once: half the server's time, at least."""
    server = result.server
    span = server.generation_ms / 1000.0 if server is not None and server.generation_ms else 0.1
    return max(STREAM_LATE_S, 0.5 * span)


def _late_source(result: RequestResult, monitor: LagMonitor) -> RequestResult:
    """A late client's request: the server's own timing, else left out of decode figures."""
    if result.decode_from != "client" or not result.ok:
        return result
    if result.server_decode_sample():
        return result.model_copy(update={"decode_from": "server"})
    lag = monitor.lag_between(result.sent_s, result.sent_s + (result.e2e_s or 0.0))
    if lag is None or lag >= STREAM_LATE_S:
        return result.model_copy(update={"decode_from": "none"})
    return result


def check_requests(
    requests: Sequence[RequestResult], monitor: LagMonitor, *, closed_loop: bool
) -> tuple[list[RequestResult], ClientCheck]:
    """The requests with `coalesced` and `decode_from` set, and the verdict on the client."""
    checked: list[RequestResult] = []
    client_blamed = server_blamed = 0
    for result in requests:
        if not is_coalesced(result):
            checked.append(result)
            continue
        lag = monitor.lag_between(result.sent_s, result.sent_s + (result.e2e_s or 0.0))
        cause = "client" if lag is not None and lag >= _late_enough(result) else "server"
        client_blamed += cause == "client"
        server_blamed += cause == "server"
        source = "server" if result.server_decode_sample() else "none"
        checked.append(result.model_copy(update={"coalesced": cause, "decode_from": source}))
    p99, cpu = monitor.p99(), monitor.cpu_share
    largest = max(monitor.lags) if monitor.lags else None
    first_tries = sorted(r.send_lag_s for r in requests if r.attempts == 1)
    send_p99 = percentile(first_tries, 99)
    reasons = []
    if p99 is not None and p99 > LOOP_LATE_S:
        reasons.append(f"its event loop woke up to {fmt_latency(largest)} late (p99 {fmt_latency(p99)})")
    if closed_loop and send_p99 is not None and send_p99 > SEND_LATE_S:
        reasons.append(f"requests went out late (send lag p99 {fmt_latency(send_p99)})")
    if cpu is not None and cpu >= CPU_BUSY_SHARE:
        reasons.append(f"spectop used {fmt_rate(cpu)} of a core")
    if client_blamed:
        reasons.append(f"{fmt_count(client_blamed)} streams reached it in one burst while it was late")
    ok = not reasons
    if not ok:  # its chunk times measured the client: the server's own timing wherever there is one
        checked = [_late_source(r, monitor) for r in checked]
    return checked, ClientCheck(
        ok=ok,
        reason="; ".join(reasons) if reasons else None,
        remedy=None if ok else REMEDY,
        loop_lag_p99_s=p99,
        loop_lag_max_s=largest,
        send_lag_p99_s=send_p99,
        cpu_share=cpu,
        ticks=len(monitor.lags),
        coalesced=client_blamed + server_blamed,
        coalesced_client=client_blamed,
        coalesced_server=server_blamed,
        server_timed=sum(1 for r in checked if r.decode_from == "server"),
        left_out=sum(1 for r in checked if r.decode_from == "none"),
    )
