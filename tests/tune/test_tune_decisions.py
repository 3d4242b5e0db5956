"""`spectop tune` against the simulator: values within noise are tied (the cheaper recommended), and
`--until-separated` adds rounds until values 10% apart are told apart."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tune.conftest import TuneSim, running_sim, write_config
from tests.tune.test_sweep import expected_rate
from tui.bench.burst_store import list_bursts
from tui.tune.result import tune_history_lines

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fast_sim(tmp_path: Path) -> Iterator[TuneSim]:
    folder = tmp_path / "sim"
    folder.mkdir()
    config = write_config(folder / "config.toml", k=2)
    config.write_text(config.read_text().replace("speed = 2.0\n", "speed = 4.0\n"))
    with running_sim(config) as sim:
        yield sim


def _tune(sim: TuneSim, out: Path, *extra: str) -> tuple[dict, str]:
    command = [
        sys.executable, "-m", "tui", "tune", str(sim.config), "--endpoint", sim.url,
        "--restart-command", shlex.join(sim.restart_command), "--health-timeout", "30",
        "--concurrency", "1", "--max-tokens", "32", "--json", str(out), *extra,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text(encoding="utf-8")), done.stdout


def test_two_values_under_two_percent_apart_are_tied_and_the_smaller_is_recommended(
    fast_sim: TuneSim, tmp_path: Path
) -> None:
    one, two = expected_rate(fast_sim.config, 1, 1), expected_rate(fast_sim.config, 2, 1)
    assert abs(one / two - 1) < 0.02  # the model: k=1 and k=2 within 2% of each other
    result, stdout = _tune(fast_sim, tmp_path / "t.json", "--values", "0,1,2", "--requests", "12", "--apply")
    (decision,) = result["decisions"]
    assert decision["concurrency"] == 1 and set(decision["tied"]) >= {1, 2}
    assert decision["best"] == 1 and decision["significant"] is False
    assert set(decision) >= {"concurrency", "best", "tied", "speedup", "ci", "significant"}
    assert "k=1 and k=2 are within noise; k=1 uses fewer draft tokens" in stdout
    # --apply: k=1 is not significantly faster than the file's own k=2: the file is kept, and why.
    assert result["applied"] is None and "not significantly faster than the file's own k=2" in stdout
    assert "num_speculative_tokens = 2" in fast_sim.config.read_text(encoding="utf-8")
    # The history: the tune is one entry; its bursts are inside its own folder, not in the burst list.
    assert list_bursts() == []
    entry = tune_history_lines()
    assert len(entry) == 3 and "best c=1: k=1 (tied)" in entry[1]
    runs = result["outcomes"][0]["cells"][0]["runs"]
    assert runs and all(Path(run["burst_file"]).parent.name.startswith("tune-") for run in runs)


def test_until_separated_adds_rounds_until_values_ten_percent_apart_are_told_apart(
    fast_sim: TuneSim, tmp_path: Path
) -> None:
    two, three = expected_rate(fast_sim.config, 2, 1), expected_rate(fast_sim.config, 3, 1)
    assert 0.07 < two / three - 1 < 0.13
    result, stdout = _tune(
        fast_sim, tmp_path / "t.json", "--values", "2,3", "--requests", "6", "--until-separated",
        "--max-rounds", "6",
    )  # fmt: skip
    (decision,) = result["decisions"]
    assert result["until_separated"] and result["looks"] == 6
    assert result["ci_level"] == pytest.approx(1 - 0.05 / 6)
    assert decision["significant"] and decision["tied"] == [2] and decision["best"] == 2
    assert result["stop_reason"].startswith("separated at every load after")
    assert 1 <= result["rounds_run"] < 6
    assert f"rounds: {result['rounds_run']} round" in stdout and "Bonferroni" in stdout
