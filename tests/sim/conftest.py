"""Shared helpers for the simulator tests."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI
from prometheus_client.parser import text_string_to_metric_families

from tui.sim.server import SimServer


def write_vllm_config(
    path: Path,
    *,
    k: int = 2,
    enabled: bool = True,
    gpu_memory_utilization: float = 0.85,
    max_num_seqs: int = 64,
    sim: str = "",
) -> Path:
    """A vLLM-style config.toml like sample_configs/config.toml, with an optional [sim] body."""
    path.write_text(
        f"""[model]
name = "deepseek-ai/DeepSeek-V3"
tensor_parallel_size = 1
max_model_len = 32768
gpu_memory_utilization = {gpu_memory_utilization}

[speculative]
enabled = {"true" if enabled else "false"}
method = "mtp"
num_speculative_tokens = {k}

[cache]
enable_prefix_caching = true
block_size = 16

[scheduler]
max_num_seqs = {max_num_seqs}

[sim]
{sim}
""",
        encoding="utf-8",
    )
    return path


def _start_sim(args: Sequence[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", "sim", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


def _ready_url(process: subprocess.Popen[str]) -> str:
    """The base URL from a started sim's ready line."""
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("spectop sim: "):
        process.kill()
        _, err = process.communicate(timeout=5)
        pytest.fail(f"no ready line: {line!r} {err!r}")
    return line.rsplit(" ", 1)[1]


def spawn_sim(*args: str) -> tuple[subprocess.Popen[str], str]:
    """`spectop sim --port 0 ARGS` as a process; returns it and its base URL from the ready line."""
    process = _start_sim(args)
    return process, _ready_url(process)


@contextlib.contextmanager
def sim_processes(*arg_lists: Sequence[str]) -> Iterator[list[str]]:
    """`spectop sim --port 0 ARGS` processes started together; their base URLs, all stopped at the end."""
    processes = [_start_sim(args) for args in arg_lists]
    try:
        yield [_ready_url(process) for process in processes]
    finally:
        stop(*processes)


def stop(*processes: subprocess.Popen[str]) -> None:
    """SIGTERM to each, then SIGKILL to any not gone within 5 s."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


Page = dict[str, list[tuple[dict[str, str], float]]]  # samples by name: {name: [(labels, value)]}


def samples(text: str) -> Page:
    """Every sample on a Prometheus page by sample name (parsed by prometheus_client)."""
    out: Page = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def value(page: Page, name: str, **labels: str) -> float:
    matches = [v for got, v in page.get(name, []) if all(got.get(k) == w for k, w in labels.items())]
    assert matches, f"{name} {labels} not on the page"
    return sum(matches)


def grew(before: Page, after: Page, name: str) -> float:
    """How much a series grew from one page to a later one."""
    return value(after, name) - value(before, name)


async def scrape(base_url: str) -> Page:
    async with httpx.AsyncClient(timeout=5.0) as client:
        response = await client.get(base_url + "/metrics")
    response.raise_for_status()
    return samples(response.text)


async def until(done: Callable[[], Any], what: str) -> Any:
    """Call (and await) `done` every 0.02 s until it gives something truthy, which is returned; the 60 s are
    a hang guard, not a speed target."""
    deadline = asyncio.get_running_loop().time() + 60
    while not (result := (await got) if inspect.isawaitable(got := done()) else got):
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.02)
    return result


async def scrape_until(base_url: str, done: Callable[[Page], bool]) -> Page:
    """Scrape until the page is `done`; that page."""

    async def page_if_done() -> Page | None:
        page = await scrape(base_url)
        return page if done(page) else None

    return await until(page_if_done, f"{base_url}/metrics never got there")


def events(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a server-sent event stream (without `[DONE]`)."""
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


async def post_all(
    base_url: str, path: str, bodies: Sequence[dict[str, Any]], concurrency: int = 8
) -> list[Any]:
    """POST every body, `concurrency` at a time; each answer's JSON, or its events for a stream."""
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=30.0) as client:

        async def one(body: dict[str, Any]) -> Any:
            async with gate:
                response = await client.post(path, json=body)
            response.raise_for_status()
            return events(response.text) if body.get("stream") else response.json()

        return list(await asyncio.gather(*(one(body) for body in bodies)))


def chat_bodies(requests: int, max_tokens: int, stream: bool = False) -> list[dict[str, Any]]:
    """Greedy chat requests of exactly `max_tokens` (for `post_all`); streamed ones end with a usage chunk."""
    return [
        {
            "messages": [{"role": "user", "content": f"Request {index}: explain prefix caches in detail."}],
            "max_tokens": max_tokens,
            "temperature": 0,
            "ignore_eos": True,
            "stream": stream,
            **({"stream_options": {"include_usage": True}} if stream else {}),
        }
        for index in range(requests)
    ]


def generate_body(index: int, max_new_tokens: int, details: bool, stream: bool = False) -> dict[str, Any]:
    """A greedy SGLang native /generate request of exactly `max_new_tokens`."""
    return {
        "text": f"Request {index}: explain prefix caches in detail.",
        "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0, "ignore_eos": True},
        "stream": stream,
        "return_spec_tokens_details": details,
    }


_OPEN_CLIENTS: list[AsyncOpenAI] = []


def client_for(base_url: str, key: str = "unused") -> AsyncOpenAI:
    """An official openai client for a sim; closed automatically when the test ends."""
    client = AsyncOpenAI(base_url=base_url + "/v1", api_key=key, max_retries=0)
    _OPEN_CLIENTS.append(client)
    return client


@pytest.fixture(autouse=True)
async def _close_openai_clients() -> AsyncIterator[None]:
    yield
    while _OPEN_CLIENTS:
        await _OPEN_CLIENTS.pop().close()


async def burst(sim: SimServer, prompts: Sequence[str], *, max_tokens: int, concurrency: int = 8) -> None:
    """One greedy completion per prompt, `concurrency` at a time, each exactly `max_tokens` long."""
    bodies = [
        {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}
        for prompt in prompts
    ]
    await post_all(sim.base_url, "/v1/completions", bodies, concurrency)


async def speedup(
    on: Path, off: Path, prompts: Sequence[str], max_tokens: int, concurrency: int, **control: float
) -> float:
    """Decode tokens per model-second of a burst with config `on` over `off` (no wall-clock jitter in it)."""
    rates = []
    for config in (on, off):
        async with SimServer(config_path=config, speed=10.0) as sim:
            if control:
                sim.control(**control)
            await burst(sim, prompts, max_tokens=max_tokens, concurrency=concurrency)
            assert sim.engine is not None
            rates.append(sim.engine.totals.generated_tokens / sim.engine.totals.busy_model_s)
    return rates[0] / rates[1]
