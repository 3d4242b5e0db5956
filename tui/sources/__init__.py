"""Where the dashboard's data comes from (core, no Textual): a source yields typed updates for the `Board`."""

from tui.sources.base import Clock, Source, WallClock
from tui.sources.live import LiveSource
from tui.sources.replay import ReplaySource

__all__ = ["Clock", "LiveSource", "ReplaySource", "Source", "WallClock"]
