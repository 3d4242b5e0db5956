"""Where the dashboard's data comes from: `LiveSource` (endpoints, logs, recorder) or `ReplaySource`.

Core code: no Textual. A source yields typed updates (`updates`); the app applies them to its `Board`.
"""

from tui.sources.base import Source
from tui.sources.clock import Clock, WallClock
from tui.sources.live import LiveSource
from tui.sources.replay import ReplaySource

__all__ = ["Clock", "LiveSource", "ReplaySource", "Source", "WallClock"]
