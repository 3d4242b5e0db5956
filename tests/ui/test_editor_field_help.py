"""Field help in the editor: the whole description on screen (wrapped, never cut), the range said once."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from textual.widgets import Input, Static
from ui_waiting import opened_editor

from tui.configs.schemas import SCHEMAS, field_specs
from tui.paths import sample_configs_dir
from tui.ui.editor_app import EditorApp
from tui.widgets.config_field import ConfigFieldRow

# A range in words or brackets inside a description says it a second time (the row adds `range_text`).
_RANGE_IN_WORDS = re.compile(r"\d\.\.\d|\bin [\[(]|[\[(]\d[^)\]]*, *\d[^)\]]*[\])]|\(> ?\d")
_CUT = re.compile(r"(?:'s|\b(?:the|a|an|of|to|in|and|or|its|their))$")


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_descriptions_do_not_repeat_the_range_nor_stop_mid_phrase(kind: str) -> None:
    for spec in field_specs(kind):  # type: ignore[arg-type]
        if spec.range_text:
            assert not _RANGE_IN_WORDS.search(spec.help), (spec.key, spec.help)
        assert not _CUT.search(spec.help.strip()), (spec.key, spec.help)


def test_ranges_read_without_float_noise() -> None:
    ranges = {spec.key: spec.range_text for spec in field_specs("vllm_toml")}
    assert ranges["speculative.num_speculative_tokens"] == "[1, 16]"
    assert ranges["model.gpu_memory_utilization"] == "(0, 1]"


@pytest.mark.parametrize("sample", ["config.toml", "sglang_settings.json", "client_settings.json"])
async def test_every_help_line_is_shown_whole_at_80_columns(tmp_path: Path, sample: str) -> None:
    target = tmp_path / sample
    shutil.copy(sample_configs_dir() / sample, target)
    app = EditorApp(target)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened_editor(pilot)
        await pilot.pause()
        rows = list(app.screen.query(ConfigFieldRow))
        assert rows
        for row in rows:
            help_line = row.query_one(".field-help", Static)
            expected = row.spec.help + (f"  {row.spec.range_text}" if row.spec.range_text else "")
            lines = [line.text.strip() for line in help_line.render_lines(help_line.region.reset_offset)]
            shown = " ".join(line for line in lines if line)
            assert " ".join(shown.split()) == " ".join(expected.split()), row.spec.key
            assert expected.count(row.spec.range_text or "\0") <= 1
            field = row.query_one("#value")
            if isinstance(field, Input) and row.spec.range_text:  # an unset field: its range once, below
                assert row.spec.range_text not in field.placeholder, row.spec.key
