"""One word, one thing: a "reading" is an endpoint's scrape; a page is a `PageSnapshot`."""

from __future__ import annotations

import ast
from pathlib import Path

from tui.telemetry.backends.base import PageSnapshot
from tui.telemetry.reading import EndpointReading

TUI = Path(__file__).resolve().parents[2] / "tui"
OTHER_DEVICES = {"gpu/models.py:GpuReading"}  # one GPU's sample: a reading of another device, named so


def test_every_class_called_a_reading_is_an_endpoint_reading_and_a_page_snapshot_is_not_one() -> None:
    readings = {
        f"{path.relative_to(TUI)}:{node.name}": [ast.unparse(base) for base in node.bases]
        for path in sorted(TUI.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Reading")
    }
    assert readings.pop("telemetry/reading.py:EndpointReading") is not None
    others = {name: bases for name, bases in readings.items() if bases != ["EndpointReading"]}
    assert set(others) <= OTHER_DEVICES, others
    assert not issubclass(PageSnapshot, EndpointReading)
    assert set(PageSnapshot.__dataclass_fields__) >= {"counters", "gauges", "models", "restart_marker"}
