"""`spectop logs` renderings: JSON lines (`kind` and `time` first, always) and ≤ 80-column text."""

from __future__ import annotations

import json
from pathlib import Path

from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import LogParser
from tui.telemetry.logs.render import event_json, event_text

SAMPLES = Path(__file__).parent / "log_samples"


def _sample_events() -> list[StatsEvent | SpecDecodeEvent | ErrorEvent]:
    events = []
    for name in ("vllm", "sglang", "llamacpp"):
        parser = LogParser()
        for line in (SAMPLES / f"{name}.server.log").read_text().splitlines():
            events.extend(parser.feed(line))
    return [
        *events,
        ErrorEvent(category="oom", message="torch.OutOfMemoryError: CUDA out of memory." * 5, line="x"),
        StatsEvent(),
        SpecDecodeEvent(per_position_acceptance=[0.5] * 15, scope="lifetime"),
    ]


def test_json_line_is_kind_time_and_the_known_fields() -> None:
    for event in _sample_events():
        text = event_json(event)
        assert "\n" not in text
        decoded = json.loads(text)
        exclude = None if isinstance(event, ErrorEvent) else {"line"}
        assert decoded == {"time": None, **event.model_dump(exclude_none=True, exclude=exclude)}
        assert list(decoded)[:2] == ["kind", "time"]
        assert ("line" in decoded) == isinstance(event, ErrorEvent)
    assert json.loads(event_json(StatsEvent(running=3))) == {"kind": "stats", "time": None, "running": 3.0}


def test_text_fits_80_columns_and_shows_unknown_time_as_dash() -> None:
    for event in _sample_events():
        assert len(event_text(event)) <= 80
    assert event_text(StatsEvent(running=3)).startswith("–")
    assert "ERROR oom: torch.OutOfMemoryError" in event_text(_sample_events()[-3])
