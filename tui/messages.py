"""Typed messages from background work (workers, timers) to widgets.

One module for every message the app posts, grouped by feature. Each section is
owned by the feature that posts it; add new messages inside your section.
"""

from __future__ import annotations

from textual.message import Message

# --- dashboard / telemetry -------------------------------------------------------------------------------


class ReadingReceived(Message):
    """One scrape of one endpoint (an EndpointReading, or a ReadingRecord during replay)."""

    def __init__(self, reading: object) -> None:
        super().__init__()
        self.reading = reading


class LogLineReceived(Message):
    """One line of an endpoint's log and the events parsed from it; `time` is when spectop read it."""

    def __init__(self, endpoint: str, time: float, line: str, events: list[object]) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.time = time
        self.line = line
        self.events = events


class EndpointUpdated(Message):
    """The app's state for `endpoint` changed (new reading, log line or alert): views redraw."""

    def __init__(self, endpoint: str, log_line: object | None = None) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.log_line = log_line


class ReplayFinished(Message):
    """A replayed recording has no more records."""


# --- config editor ---------------------------------------------------------------------------------------


# --- bursts (A/B bench) ----------------------------------------------------------------------------------
