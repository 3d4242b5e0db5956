"""Coalesced streams (chunks that arrived far faster than a server steps), and which side to blame: the
client when its event loop ran late meanwhile, else the server. Their decode figures come from the
server's own timing when the response carries it, and are left out otherwise."""

from __future__ import annotations

from collections.abc import Sequence

from tui.bench.client_check import (
    CPU_BUSY_SHARE,
    LOOP_LATE_S,
    REMEDY,
    SEND_LATE_S,
    STREAM_LATE_S,
    ClientCheck,
    LagMonitor,
)
from tui.bench.results import RequestResult
from tui.bench.stats import percentile
from tui.format import fmt_count, fmt_latency, fmt_rate

COALESCED_GAP_S = 0.0003
MIN_CHUNKS = 4
SERVER_PACE_FACTOR = 1.5


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
    """How late the client must have been to have read this whole stream at once: about half the time
    the server took to write it (its own figure, else a tenth of a second), at least STREAM_LATE_S."""
    server = result.server
    span = server.generation_ms / 1000.0 if server is not None and server.generation_ms else 0.1
    return max(STREAM_LATE_S, 0.5 * span)


def _late_source(result: RequestResult, monitor: LagMonitor | None) -> RequestResult:
    """A request of a burst whose client fell behind: the server's own timing, else left out of decode
    figures when the client was late while it streamed (its chunk times are the client's)."""
    if result.decode_from != "client" or not result.ok:
        return result
    if result.server_decode_sample():
        return result.model_copy(update={"decode_from": "server"})
    end = result.sent_s + (result.e2e_s or 0.0)
    lag = monitor.lag_between(result.sent_s, end) if monitor is not None else None
    if lag is None or lag >= STREAM_LATE_S:
        return result.model_copy(update={"decode_from": "none"})
    return result


def check_requests(
    requests: Sequence[RequestResult], monitor: LagMonitor | None, *, closed_loop: bool
) -> tuple[list[RequestResult], ClientCheck]:
    """The requests with `coalesced` and `decode_from` set, and the verdict on the client."""
    checked: list[RequestResult] = []
    client_blamed = server_blamed = 0
    for result in requests:
        if not is_coalesced(result):
            checked.append(result)
            continue
        end = result.sent_s + (result.e2e_s or 0.0)
        lag = monitor.lag_between(result.sent_s, end) if monitor is not None else None
        cause = "client" if lag is not None and lag >= _late_enough(result) else "server"
        client_blamed += cause == "client"
        server_blamed += cause == "server"
        source = "server" if result.server_decode_sample() else "none"
        checked.append(result.model_copy(update={"coalesced": cause, "decode_from": source}))
    p99 = monitor.p99() if monitor is not None else None
    largest = max(monitor.lags) if monitor is not None and monitor.lags else None
    cpu = monitor.cpu_share if monitor is not None else None
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
        ticks=len(monitor.lags) if monitor is not None else 0,
        coalesced=client_blamed + server_blamed,
        coalesced_client=client_blamed,
        coalesced_server=server_blamed,
        server_timed=sum(1 for r in checked if r.decode_from == "server"),
        left_out=sum(1 for r in checked if r.decode_from == "none"),
    )
