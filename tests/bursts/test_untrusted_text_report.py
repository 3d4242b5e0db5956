"""No control sequence from a server or a file in the bench report (text) or its exports (CSV, Markdown,
JSON); what `spectop bench` prints of them is in tests/cli/test_untrusted_text_stdout.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.untrusted import assert_no_raw_controls, hostile_burst
from tui.bench.report.export import export
from tui.bench.report.summary import burst_summary
from tui.bench.report.text import render_text
from tui.bench.results import BurstResult


def test_report_text_has_no_control_sequence() -> None:
    text = render_text(burst_summary(hostile_burst(), with_detail=False))
    assert "greedy equivalence: 0/3 identical; first divergence in p0evil" in text
    assert_no_raw_controls(text)


@pytest.mark.parametrize("kind", ["csv", "markdown", "json"])
def test_exports_have_no_raw_control_sequence(tmp_path: Path, kind: str) -> None:
    burst = hostile_burst()
    raw = export(burst, kind, tmp_path / f"burst.{kind}", detail=True).read_text(encoding="utf-8")
    assert_no_raw_controls(raw)
    if kind == "json":  # escaped, not lost
        assert BurstResult.model_validate(json.loads(raw)["burst"]) == burst
    else:
        assert "evil" in raw
