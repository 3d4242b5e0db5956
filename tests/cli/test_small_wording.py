"""The small things the command line and the screens say, each in the user's words."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import spectop
from tui.advice.guard import ACTION_WORDS, GuardRecord
from tui.commands.snapshot import _Result, _table
from tui.configs.document import load_document
from tui.screens.tune import screen_words
from tui.tune.plan import TunePlanError, check_values, default_key


def test_a_multi_line_error_is_printed_as_lines() -> None:
    result = _Result("http://127.0.0.1:9/metrics", 1.0)
    result.error = "HTTP 500\nTraceback (most recent call last):\n  RuntimeError: boom"
    lines = _table(result)
    assert not any("␊" in line for line in lines)
    assert lines[1] == "  error: HTTP 500" and lines[-1].strip() == "RuntimeError: boom"


def test_replay_of_dev_null_is_not_a_recording() -> None:
    shown = spectop("replay", "/dev/null")
    assert shown.returncode == 2
    assert "is not a spectop recording" in shown.stderr and "no such file" not in shown.stderr
    assert "no such file" in spectop("replay", "/nonexistent/recording.jsonl").stderr


def test_snapshot_json_echoes_the_normalised_url() -> None:
    shown = spectop("snapshot", "127.0.0.1:9", "--json", "--window", "0.1", "--timeout", "1")
    record = json.loads(shown.stdout.splitlines()[0])
    assert record["url"] == "http://127.0.0.1:9"  # as spectop read it, not as typed
    assert "using http://127.0.0.1:9" in shown.stderr


def test_guard_actions_in_words() -> None:
    record = GuardRecord("mtp-on", 0.0, "switched_off", "acceptance 28% below 50% for 30 s", 0.28, 0.5)
    assert record.line() == "guard switched speculation off: acceptance 28% below 50% for 30 s"
    assert all("_" not in words for words in ACTION_WORDS.values())


def test_the_tune_screen_names_its_fields_not_the_flags(tmp_path: Path) -> None:
    doc = load_document(
        "[speculative]\nenabled = true\nnum_speculative_tokens = 2\n", "vllm_toml", tmp_path / "c.toml"
    )
    try:
        check_values(default_key(doc), [0, 32])
    except TunePlanError as error:
        said = screen_words(str(error))
    assert said.startswith("values: ") and "--" not in said
    assert "--" not in screen_words("--apply-at 4: not one of --concurrency")
