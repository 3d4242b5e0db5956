"""Cancellation helpers: the cancel lands 0, 1, 2, ... loop turns after the event (3.11's wait_for bug)."""

from __future__ import annotations

import asyncio

TURNS = range(12)  # loop turns between the event and the cancel
ENDED_WITHIN_S = 5.0  # a cancelled task ends at once; one that swallowed the cancel never does


async def loop_turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def cancel_ends(task: asyncio.Task[None]) -> bool:
    """Cancel `task` (one that never ends by itself): False when it swallowed the cancel and went on.

    A task that went on is cancelled again (that cancel lands while it waits) so it ends either way.
    """
    assert task.cancel()
    await asyncio.wait({task}, timeout=ENDED_WITHIN_S)
    ended = task.done()
    if not ended:
        task.cancel()
        await asyncio.wait({task}, timeout=ENDED_WITHIN_S)
    assert task.cancelled()
    return ended
