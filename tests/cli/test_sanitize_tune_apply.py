"""`spectop tune --apply` prints the applied diff of the config file: the file's text is untrusted like any
other, so its control characters reach stdout made visible, never raw (issue 11, item 1).

TOML allows C1 controls (the 8-bit CSI U+009B) and bidi overrides in comments, so a valid config file can
carry them on the very line the tune changes. Against a real simulator, restarted through the demo's
control socket (tests/tune/conftest.py's `tune_sim`).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.tune.conftest import TuneSim, _private_history, tune_sim  # noqa: F401 (fixtures)
from tests.tune.test_sweep import run_cli

HOSTILE_COMMENT = "# draft\x9b2J\u202e tokens per step"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def test_the_applied_diff_is_printed_without_raw_controls(tune_sim: TuneSim, tmp_path: Path) -> None:  # noqa: F811
    text = tune_sim.config.read_text(encoding="utf-8")
    text = text.replace(
        "num_speculative_tokens = 2   # draft tokens per step",
        f"num_speculative_tokens = 4   {HOSTILE_COMMENT}",  # k=2 is 24% faster: --apply writes it
    )
    tune_sim.config.write_text(text, encoding="utf-8")
    out = tmp_path / "tune.json"
    process = run_cli(
        tune_sim, "--values", "0,2", "--concurrency", "1", "--requests", "6", "--apply", "--json", str(out)
    )
    stdout, stderr = process.communicate(timeout=180)
    assert process.returncode == 0, stderr
    assert json.loads(out.read_text(encoding="utf-8"))["applied"]["value"] == 2
    assert "+num_speculative_tokens = 2   # draft" in stdout  # the diff is shown, made harmless
    for raw in RAW:
        assert raw not in stdout + stderr, (raw, stdout)
    assert HOSTILE_COMMENT in tune_sim.config.read_text(encoding="utf-8")  # the file keeps its bytes
