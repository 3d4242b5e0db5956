"""The time the screens show ages against: the wall clock live, the recording's time in a replay."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float | None:
        """Unix seconds now (None while a replay has not played its first record)."""
        ...


class WallClock:
    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._now = now

    def time(self) -> float:
        return self._now()
