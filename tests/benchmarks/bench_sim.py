"""The simulator: speed model figures, wall-clock request time and CPU cost."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import httpx

from tui.sim.server import SimServer

CONFIG = """[model]
name = "deepseek-ai/DeepSeek-V3"
gpu_memory_utilization = 0.85
[speculative]
enabled = {enabled}
num_speculative_tokens = 2
[scheduler]
max_num_seqs = 64
"""


async def decode_rate(config: Path, concurrency: int, requests: int) -> float:
    async with SimServer(config_path=config, speed=10.0) as sim, httpx.AsyncClient(timeout=60) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(index: int) -> None:
            async with gate:
                body = {"prompt": f"prompt {index}", "max_tokens": 128, "temperature": 0, "ignore_eos": True}
                (await client.post(sim.base_url + "/v1/completions", json=body)).raise_for_status()

        await asyncio.gather(*(one(index) for index in range(requests)))
        assert sim.engine is not None
        return sim.engine.totals.generated_tokens / sim.engine.totals.busy_model_s


async def main() -> None:
    folder = Path(tempfile.mkdtemp())
    on, off = folder / "on.toml", folder / "off.toml"
    on.write_text(CONFIG.format(enabled="true"))
    off.write_text(CONFIG.format(enabled="false"))
    print("simulated decode tokens/s (model time), k=2, default acceptance")
    for concurrency in (1, 8, 32, 64):
        requests = max(4, concurrency * 2)
        rate_on = await decode_rate(on, concurrency, requests)
        rate_off = await decode_rate(off, concurrency, requests)
        gain = rate_on / rate_off
        print(f"  concurrency {concurrency:3d}: on {rate_on:9.0f}  off {rate_off:9.0f}  gain {gain:.2f}x")

    async with SimServer(config_path=on) as sim, httpx.AsyncClient(timeout=60) as client:
        body = {"prompt": "hello", "max_tokens": 256, "temperature": 0, "ignore_eos": True}
        started = time.monotonic()
        (await client.post(sim.base_url + "/v1/completions", json=body)).raise_for_status()
        print(f"256-token greedy request, concurrency 1, speed 1: {time.monotonic() - started:.3f} s wall")

    sims = [SimServer(flavor=("vllm", "sglang", "llamacpp")[i % 3], seed=i) for i in range(16)]
    await asyncio.gather(*(sim.start() for sim in sims))
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(3.0)
    print(f"16 idle sims: {100 * (time.process_time() - cpu) / (time.monotonic() - wall):.1f} % of one core")
    for sim in sims:
        sim.control(background_load_rps=2.0)
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(5.0)
    tokens = sum(sim.engine.totals.generated_tokens for sim in sims if sim.engine is not None)
    used = time.process_time() - cpu
    elapsed = time.monotonic() - wall
    print(
        f"16 sims with 2 req/s background load each: {100 * used / elapsed:.1f} % of one core, "
        f"{tokens / elapsed:.0f} simulated tokens/s in total"
    )
    await asyncio.gather(*(sim.stop() for sim in sims))


if __name__ == "__main__":
    asyncio.run(main())
