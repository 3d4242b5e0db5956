"""A config file's credential (an `api_key = "sk-…"` the lint warns about) never travels with a diff: the
guard's diff goes into its dialog, the alerts list and the recording; the tune's diffs into its result
(JSON export, history) and stdout. The values of secret keys are masked there, as `config show` and the
editor's fields mask them: secrets are never printed, logged or exported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tune.conftest import write_config
from tui.advice.guard_control import prepare
from tui.configs.editing import masked_diff
from tui.settings import EndpointSettings
from tui.tune.runner import TuneOptions, TuneRun

SECRET = "sk-live-NEVER-IN-A-DIFF-42"


def config_with_a_key(path: Path) -> Path:
    """tests/tune's config with the server's API key right above the speculative section and in the
    section right below it: either is context of a diff of that section."""
    write_config(path, k=1)
    text = path.read_text(encoding="utf-8")
    text = text.replace("\n[speculative]", f'api_key = "{SECRET}"\n\n[speculative]')
    text = text.replace("\n[scheduler]", f'[server]\napi_key = "{SECRET}"\n\n[scheduler]')
    path.write_text(text, encoding="utf-8")
    return path


async def test_the_guards_diff_masks_the_key(tmp_path: Path) -> None:
    config = config_with_a_key(tmp_path / "config.toml")
    endpoint = EndpointSettings(name="x", url="http://127.0.0.1:1", config_file=config)
    prepared = await prepare(endpoint)
    assert "-enabled = true" in prepared.diff and "+enabled = false" in prepared.diff
    assert SECRET not in prepared.diff
    assert "api_key = ****" in prepared.diff  # the context line is there, its value masked


async def test_the_tunes_diffs_mask_the_key(tmp_path: Path) -> None:
    config = config_with_a_key(tmp_path / "config.toml")
    tune = TuneRun(TuneOptions(config_file=config, endpoint="http://127.0.0.1:1", restart_command=["true"]))
    await tune.prepare()
    diff = tune.diff_for(3)
    assert "+num_speculative_tokens = 3" in diff and SECRET not in diff
    assert SECRET in tune.text_for(3)  # the file written keeps its key, of course


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (f' api_key = "{SECRET}"', " api_key = ****"),
        (f'-  "api_key": "{SECRET}",', '-  "api_key": ****'),
        (f"+api-key: {SECRET}", "+api-key: ****"),
        (f"  server.password = '{SECRET}'", "  server.password = ****"),
        (" num_speculative_tokens = 2", " num_speculative_tokens = 2"),
        (f"--- {SECRET}_api_key = x", f"--- {SECRET}_api_key = x"),  # a file name: not a key line
    ],
)
def test_masked_diff_lines(line: str, shown: str) -> None:
    assert masked_diff(line + "\n") == shown + "\n"
