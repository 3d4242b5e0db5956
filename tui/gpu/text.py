"""The memory bar the GPU panel and the GPU rows share."""

from __future__ import annotations

BAR_WIDTH = 10


def memory_bar(fraction: float | None, width: int = BAR_WIDTH) -> str:
    """`███████░░░` for 0.7; dots when the fraction is unknown."""
    if fraction is None:
        return "·" * width
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)
