"""`spectop replay FILE` on a file that is not a recording says why on one line: the reason may quote the
file (a JSON tag, a field name), which is untrusted text like any other (issue 11, items 1 and 14)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tests.cli.test_sanitize_cli import assert_no_raw_controls, spectop
from tests.test_sanitize import HOSTILE
from tui.telemetry.recording import RecordingError, parse_record


@pytest.mark.parametrize(
    "record",
    [{"kind": HOSTILE}, {"kind": "reading", "time": HOSTILE}],
    ids=["tag", "value"],
)
async def test_not_a_recording_is_said_without_control_sequences(tmp_path: Path, record: dict) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")  # valid JSON: ESC spelled \u001b
    with pytest.raises(RecordingError):
        parse_record(path.read_text(encoding="utf-8"), path, 1)
    code, out, err = await spectop("replay", str(path))
    assert code == 2 and "not a spectop recording" in err and "Traceback" not in err
    assert_no_raw_controls(out + err)
