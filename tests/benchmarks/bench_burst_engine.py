"""The burst engine's streams and chunks per second per core, and the TTFT it adds over a server whose
truth is recorded, next to a plain httpx loop in the same run. `[--quick]`"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from timed_server import Behaviour, TimedServer

from tui.bench.engine import ArmTarget, BurstConfig, run_burst
from tui.bench.prompts import load_prompt_set
from tui.bench.transport import burst_client


def _client(concurrency: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=concurrency + 8, max_keepalive_connections=concurrency + 8)
    return httpx.AsyncClient(limits=limits, timeout=60)


async def engine_run(
    url: str, concurrency: int, requests: int, sharded: bool = True, warmup: int = 0
) -> tuple[float, float, int, float, list]:
    """Wall s, CPU s, chunks received, the engine's clock origin and its measured requests."""
    # sharded: what `spectop bench` uses (pools of 16)
    async with burst_client(concurrency + 8, timeout_s=60) if sharded else _client(concurrency) as client:
        config = BurstConfig(
            a=ArmTarget("bench", url, model="m", scrape_metrics=False),
            prompt_set=load_prompt_set("mixed"),
            requests=requests,
            warmup=warmup,
            rounds=1,
            concurrency=concurrency,
        )
        wall, cpu = time.perf_counter(), time.process_time()
        result = await run_burst(config, client)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    measured = result.arms[0].requests
    chunks = sum(len(r.chunk_times_s) for r in measured)
    return wall, cpu, chunks, result.clock_origin_s or 0.0, measured


async def plain_httpx_run(
    url: str, concurrency: int, requests: int, warmup: int = 0
) -> tuple[float, float, int, list]:
    """The baseline: what a simple benchmark script does. Returns per-request (send, ttft, id)."""
    prompts = load_prompt_set("mixed").prompts
    results: list[tuple[float, float | None, str]] = []
    chunks = 0
    semaphore = asyncio.Semaphore(concurrency)
    async with _client(concurrency) as client:

        async def one(index: int) -> None:
            nonlocal chunks
            body = {
                "model": "m",
                "messages": prompts[index % len(prompts)].chat_messages(),
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            request_id = f"plain-{index}"
            async with semaphore:
                sent = time.perf_counter()
                ttft = None
                async with client.stream(
                    "POST", f"{url}/v1/chat/completions", json=body, headers={"X-Request-Id": request_id}
                ) as response:
                    async for line in response.aiter_lines():
                        if not line.startswith("data:") or line == "data: [DONE]":
                            continue
                        event = json.loads(line[5:])
                        choices = event.get("choices") or []
                        if choices and (choices[0].get("delta") or {}).get("content"):
                            chunks += 1
                            if ttft is None:
                                ttft = time.perf_counter() - sent
                results.append((sent, ttft, request_id))

        if warmup:
            await asyncio.gather(*(one(-1 - i) for i in range(warmup)))
            results.clear()
            chunks = 0
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(i) for i in range(requests)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, chunks, results


def throughput(quick: bool) -> None:
    print("1. Streams and chunks/s (server: own process, a 1-token chunk every 5 ms, 100 chunks)")
    print(f"{'client':12}{'streams':>8}{'chunks/s':>10}{'CPU %':>7}{'chunks/CPU-s':>14}")
    levels = (1, 16, 64) if quick else (1, 16, 64, 128, 256)
    behaviour = Behaviour(ttft_s=0.01, interval_s=0.005, chunks=100)
    with TimedServer(behaviour) as server:
        for concurrency in levels:
            requests = max(4, concurrency * 2)
            for name in ("spectop", "plain httpx"):
                runner = engine_run if name == "spectop" else plain_httpx_run
                wall, cpu, chunks, *_ = asyncio.run(runner(server.base_url, concurrency, requests))
                print(
                    f"{name:12}{concurrency:>8}{chunks / wall:>10.0f}{cpu / wall * 100:>7.0f}"
                    f"{chunks / cpu if cpu else 0:>14.0f}"
                )


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))] * 1000


def ttft_overhead(quick: bool) -> None:
    print()
    print("2. ms the client adds to the TTFT it measures (server: own process, first chunk after 80 ms)")
    print("   total = client TTFT - server truth (first write - request received), split into")
    print("   send side (request received - client send stamp) and read side (client arrival - first write)")
    columns = ("total p50", "p90", "send p50", "p90", "read p50", "p90")
    print(f"{'client':12}{'streams':>8}" + "".join(f"{c:>10}" for c in columns))
    behaviour = Behaviour(ttft_s=0.08, interval_s=0.02, chunks=10)
    for concurrency in (1, 64):
        requests = 16 if concurrency == 1 else (64 if quick else 128)
        for name in ("spectop", "spectop 1pool", "plain httpx"):
            with TimedServer(behaviour) as server:
                if name.startswith("spectop"):
                    sharded = name == "spectop"  # after one warm-up request per slot
                    *_, origin, measured = asyncio.run(
                        engine_run(server.base_url, concurrency, requests, sharded, warmup=concurrency)
                    )
                    truth = {r.headers["x-request-id"].rsplit("-", 1)[1]: r for r in server.records}
                    samples = [(origin + m.sent_s, m.ttft_s, truth[f"a{m.index}"]) for m in measured]
                    lags = [m.send_lag_s for m in measured]
                else:
                    _, _, _, results = asyncio.run(
                        plain_httpx_run(server.base_url, concurrency, requests, warmup=concurrency)
                    )
                    truth = {r.headers["x-request-id"]: r for r in server.records}
                    samples = [(sent, ttft, truth[request_id]) for sent, ttft, request_id in results]
            send_side = [record.received_s - sent for sent, _, record in samples]
            read_side = [sent + (ttft or 0) - record.writes_s[0] for sent, ttft, record in samples]
            total = [a + b for a, b in zip(send_side, read_side, strict=True)]
            figures = [_ms(values, q) for values in (total, send_side, read_side) for q in (0.5, 0.9)]
            print(f"{name:12}{concurrency:>8}" + "".join(f"{f:>10.2f}" for f in figures))
            if name.startswith("spectop"):
                lag = f"p50 {_ms(lags, 0.5):.2f} ms, p90 {_ms(lags, 0.9):.2f} ms"
                print(f"{'':20}(client-side time before the wire, reported apart as send lag: {lag})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer levels, for a smoke run")
    args = parser.parse_args()
    throughput(args.quick)
    ttft_overhead(args.quick)


if __name__ == "__main__":
    main()
