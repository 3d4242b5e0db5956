"""Built-in gentle traffic: Poisson arrivals from a prompt mix, so metrics and logs move by themselves."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

from tui.sim.engine import SimEngine

PROMPT_MIX: tuple[tuple[str, int], ...] = (
    (
        "Implement a thread-safe LRU cache with expiry in Python.\n```python\nclass LRUCache:\n    "
        "def __init__(self, "
        "capacity: int, ttl: float) -> None:\n        self.capacity = capacity\n",
        192,
    ),
    (
        "Explain how speculative decoding keeps the output of the target model unchanged while "
        "drafting several "
        "tokens ahead, and why the acceptance rate matters for throughput.",
        160,
    ),
    (
        "Summarise the following meeting notes for a busy manager. The team discussed the launch "
        "date, the budget, "
        "the hiring plan and the open risks around the data migration.",
        128,
    ),
    (
        "Repeat after me: the quick brown fox jumps over the lazy dog. the quick brown fox jumps "
        "over the lazy dog. "
        "the quick brown fox jumps over the lazy dog.",
        96,
    ),
    (
        "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + "
        "fibonacci(n - 2)\n\n"
        "# Rewrite this function iteratively and add type hints.\n",
        224,
    ),
    (
        "Write a short story about a lighthouse keeper who discovers that the light has been "
        "signalling to ships "
        "that do not exist.",
        256,
    ),
)


async def run_background_load(
    engine: Callable[[], SimEngine], rate: Callable[[], float], on_request: Callable[[], None], seed: int = 0
) -> None:
    """Submit requests at `rate()` per second (Poisson) until cancelled; `engine()` may change on restart."""
    rng = random.Random(seed ^ 0xB6)
    while True:
        rps = rate()
        if rps <= 0:
            await asyncio.sleep(0.25)
            continue
        await asyncio.sleep(min(30.0, rng.expovariate(rps)))
        if rate() <= 0:
            continue
        prompt, typical = rng.choice(PROMPT_MIX)
        current = engine()
        request = current.new_request(
            endpoint="chat",
            prompt_text=prompt,
            max_tokens=max(16, int(rng.gauss(typical, typical / 4))),
            temperature=0.0 if rng.random() < 0.5 else 0.7,
            seed=rng.randrange(1 << 30),
        )
        on_request()
        current.submit(request)  # nobody reads its outbox; it is freed with the request
