"""Background traffic for tests that watch a live dashboard: one thread per server, request after request."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from llama_workload import PROMPTS, complete

JOIN_TIMEOUT_S = 60.0


@contextmanager
def steady_traffic(urls: list[str], max_tokens: int = 64) -> Iterator[dict[str, int]]:
    """While inside, each URL gets one request after another; yields url → requests finished so far.

    Failures (a server that was killed on purpose) are counted under "<url> errors" and do not stop the
    loop; leaving the block stops every thread within one request.
    """
    stop = threading.Event()
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def loop(url: str) -> None:
        i = 0
        while not stop.is_set():
            try:
                complete(url, PROMPTS[i % len(PROMPTS)], max_tokens, timeout_s=30.0)
                key = url
            except httpx.HTTPError:
                key = f"{url} errors"
                stop.wait(0.2)
            with lock:
                counts[key] = counts.get(key, 0) + 1
            i += 1

    threads = [threading.Thread(target=loop, args=(url,), daemon=True) for url in urls]
    for thread in threads:
        thread.start()
    try:
        yield counts
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=JOIN_TIMEOUT_S)
