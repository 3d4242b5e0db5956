"""Typed messages from background work (workers, timers) to widgets.

One module for every message the app posts, grouped by feature. Each section is
owned by the feature that posts it; add new messages inside your section.
"""

from __future__ import annotations

from textual.message import Message

# --- dashboard / telemetry -------------------------------------------------------------------------------


# --- config editor ---------------------------------------------------------------------------------------


# --- bursts (A/B bench) ----------------------------------------------------------------------------------
