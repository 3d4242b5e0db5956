"""`EndpointReading`: one poll of one endpoint, as the dashboard shows it and a recording stores it (every
field but `name`, `time` and `up` has a default, so older recordings still read)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tui.telemetry.figures import Figures


class EndpointReading(BaseModel):
    """What the dashboard renders for one endpoint after one poll (live or replayed)."""

    kind: Literal["reading"] = "reading"
    name: str
    url: str | None = None
    time: float  # time.time() of the poll
    up: bool
    error: str | None = None
    backend: str | None = None
    model: str | None = None
    # Seconds covered by the figures (0 until two scrapes; less after a restart); None: not recorded.
    window_s: float | None = None
    figures: Figures = Field(default_factory=Figures)
    consecutive_failures: int = 0
    per_model: dict[str, Figures] = Field(default_factory=dict)  # when the server serves several models
    figures_failed: int = 0  # > 0: the polls whose figures could not be derived (a bug, in the debug log)
    impossible_figures: int = 0  # figures dropped as impossible so far (plausible_figures.py)

    @property
    def source_failed(self) -> bool:
        """True when what reads the endpoint failed, not the endpoint (fleet mode: Prometheus is down)."""
        return False
