"""A source for scripted tests: no pause, one status line; the test gives `updates()`."""

from __future__ import annotations

from tui.sources.base import Source


class ScriptedSourceBase(Source):
    @property
    def paused(self) -> bool:
        return False

    def toggle_pause(self) -> None:
        return None

    def status(self) -> list[str]:
        return ["scripted"]
