"""Waiting on a real vLLM from a Pilot-driven app: the suite's one `wait_for`, failing at once when the
server's worker died (the condition can no longer come true: the test fails with the server's log instead
of holding the CI run until its hang guard).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot
from vllm_managed import ManagedVllm

from tests.ui.ui_waiting import wait_for

HANG_GUARD_S = 900.0
# What vLLM's log says when its worker crashed (SIGILL, say). Not "EngineDeadError": vLLM logs that on every
# SIGTERM too, so a planned restart prints it.
ENGINE_DEAD_MARKS = ("died unexpectedly",)


async def until_served(
    pilot: Pilot[Any],
    condition: Callable[[], bool],
    what: str,
    server: ManagedVllm,
    timeout_s: float = HANG_GUARD_S,
) -> None:
    def died() -> bool:
        return any(mark in server.tail() for mark in ENGINE_DEAD_MARKS)

    await wait_for(pilot, lambda: condition() or died(), what, timeout_s=timeout_s, explain=server.tail)
    if not condition():
        raise AssertionError(f"vLLM's worker died while waiting for {what}:\n{server.tail()}")
