"""The burst form's placeholders are marked as examples in words, not by italics alone (NO_COLOR shows no
difference between an italic example and a typed value in many terminals)."""

from __future__ import annotations

from typing import Any

import pytest
from bench_fixtures import MTP_OFF, MTP_ON, BenchTestApp, bench_screen
from textual.widgets import Input


@pytest.mark.usefixtures("bench_folders")
async def test_every_empty_burst_field_says_its_placeholder_is_an_example(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = BenchTestApp([MTP_OFF, MTP_ON])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = bench_screen(app)
        examples: dict[str, Any] = {
            field.id: field.placeholder
            for field in screen.query(Input)
            if field.id in ("a-extra", "b-extra", "slo", "client-settings")
        }
        assert len(examples) == 4
        for field_id, placeholder in examples.items():
            assert "e.g. " in placeholder, field_id
        # and on screen, at 80 columns, where the field is narrow: the words come first
        a_extra = screen.query_one("#a-extra", Input)
        row = app.screen._compositor.render_strips()[a_extra.region.y]
        assert "e.g." in "".join(segment.text for segment in row)
