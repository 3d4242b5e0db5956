"""`Source`: where the dashboard's data comes from (live and replay differ by its properties only)."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import ClassVar, Protocol

import httpx

from tui.sources.updates import Update
from tui.telemetry.recording import GuardLogRecord


class Clock(Protocol):
    def time(self) -> float | None:
        """Unix seconds now (None while a replay has not played its first record)."""
        ...


class WallClock:
    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._now = now

    def time(self) -> float:
        return self._now()


class Source(ABC):
    allows_bench: ClassVar[bool] = False
    allows_editing: ClassVar[bool] = False
    toasts_alerts: ClassVar[bool] = False  # a replay shows badges only: old toasts would bury the screen
    has_speed: ClassVar[bool] = False
    is_fleet: ClassVar[bool] = False

    clock: Clock
    http_client: httpx.AsyncClient | None = None
    finished: bool = False  # True once the source has nothing more to say
    paused: bool = False

    async def start(self) -> None:  # noqa: B027 (a hook: most sources need nothing)
        """Open what the source needs before its first update (the live recording file)."""

    @abstractmethod
    def updates(self) -> AsyncIterator[Update]:
        """Every update, in order, until the source is finished or the consuming task is cancelled."""

    def toggle_pause(self) -> None:
        """Live: stop / restart polling (logs are still followed). Replay: stop / restart the playback."""
        self.paused = not self.paused

    def change_speed(self, step: int) -> None:  # noqa: B027 (a hook)
        """One step faster (+1) or slower (-1) when the source has a speed."""

    @abstractmethod
    def status(self) -> list[str]:
        """What the header's subtitle says about the source ("every 1s", "recording", "replay F ×2")."""

    def reread_thresholds(self) -> None:  # noqa: B027 (a hook)
        """The endpoints' config files may have changed (the editor closed): read their thresholds again."""

    async def record_guard(self, record: GuardLogRecord) -> None:  # noqa: B027 (a hook)
        """A fallback-guard action, into the recording when there is one (OSError if it cannot be written)."""

    async def close(self) -> None:  # noqa: B027 (a hook)
        """Stop everything and release files and connections; safe to call more than once."""
