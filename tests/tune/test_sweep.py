"""`spectop tune` against a real simulator: the best k, a failing value, signals, ties, --until-separated."""

from __future__ import annotations

import json
import math
import shlex
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.tune.conftest import TuneSim, changed_lines, health, running_sim, spectop_process, write_config
from tui.bench.burst_store import list_bursts
from tui.sim.behaviour import Behaviour, expected_tokens_per_step
from tui.sim.config import load_sim_config
from tui.tune.result import list_tunes, load_tune, save_tune, tune_history_lines
from tui.tune.runner import TuneOptions, TuneRun

VALUES = (0, 2, 4)
CONCURRENCIES = (1, 8)


def model_for(config: Path, k: int) -> Behaviour:
    """The simulator's own behaviour model for the file with `k` draft tokens (0 = off)."""
    text = config.read_text(encoding="utf-8")
    probe = config.with_name(f"probe-{k}.toml")
    probe.write_text(text, encoding="utf-8")
    sim = load_sim_config(probe)
    sim = sim.model_copy(update={"num_speculative_tokens": max(k, 1), "spec_enabled": k > 0})
    return Behaviour.from_config(sim)


def expected_rate(config: Path, k: int, concurrency: int) -> float:
    """Tokens per second per sequence: expected tokens per step / step time at this batch."""
    behaviour = model_for(config, k)
    tokens = expected_tokens_per_step(behaviour.acceptance[: behaviour.k])
    return tokens / behaviour.decode_step_s(concurrency)


def accepted_moments(probabilities: list[float]) -> tuple[float, float]:
    """Mean and variance of the accepted drafts in one step (stop at the first rejection)."""
    chain, distribution = 1.0, []
    for p in probabilities:
        distribution.append(chain * (1 - p))
        chain *= p
    distribution.append(chain)
    mean = sum(j * q for j, q in enumerate(distribution))
    return mean, sum((j - mean) ** 2 * q for j, q in enumerate(distribution))


async def test_sweep_finds_the_models_best_k_and_restores_the_file(tune_sim: TuneSim) -> None:
    original = tune_sim.config.read_bytes()
    expected_best = {}
    for concurrency in CONCURRENCIES:
        rates = {k: expected_rate(tune_sim.config, k, concurrency) for k in VALUES}
        ranked = sorted(rates, key=rates.__getitem__, reverse=True)
        assert rates[ranked[0]] > 1.1 * rates[ranked[1]], "the model must separate the values"
        expected_best[concurrency] = ranked[0]
    assert len(set(expected_best.values())) == 2  # the best k changes with the load
    options = TuneOptions(
        config_file=tune_sim.config,
        endpoint=tune_sim.url,
        restart_command=tune_sim.restart_command,
        values=VALUES,
        concurrencies=CONCURRENCIES,
        requests=12,
        max_tokens=24,
        log_file=tune_sim.sim.log_file,
        health_timeout_s=15,
    )
    result = await TuneRun(options).run()

    assert result.best == expected_best
    assert result.final_restart_ok is True and result.restored and not result.cancelled
    assert tune_sim.config.read_bytes() == original
    assert health(tune_sim.url) == 200
    # The schedule and the break-even follow from the best values.
    schedule = [(step.value, step.up_to_concurrency) for step in result.schedule]
    assert schedule == [(expected_best[1], 1), (expected_best[8], None)]
    assert result.break_even_concurrency == (8 if expected_best[8] == 0 else None)
    # Acceptance per k matches the model within sampling error.
    for k in (2, 4):
        behaviour = model_for(tune_sim.config, k)
        probabilities = behaviour.acceptance[:k]
        mean, variance = accepted_moments(probabilities)
        tokens = expected_tokens_per_step(probabilities)
        for concurrency in CONCURRENCIES:
            cell = result.cell(k, concurrency)
            assert cell is not None and cell.acceptance_rate is not None
            steps = len(cell.runs[-1].samples) * 23 / tokens  # the latest burst's requests, ~23 after the 1st
            tolerance = 4 * math.sqrt(variance / steps) / k + 0.01
            assert abs(cell.acceptance_rate - mean / k) < tolerance
            assert cell.mean_acceptance_length is not None
            assert abs(cell.mean_acceptance_length - tokens) < 4 * math.sqrt(variance / steps) + 0.05
            positions = cell.per_position_acceptance
            assert positions is not None and len(positions) == k
            assert positions[0] == pytest.approx(probabilities[0], abs=tolerance * k)
            # Per position and acceptance from the same scrapes (the burst's own, after its warm-up):
            # the positions add up to the acceptance exactly, not within another window's noise.
            assert sum(positions) / k == pytest.approx(cell.acceptance_rate, rel=1e-9)
            assert 1 + sum(positions) == pytest.approx(cell.mean_acceptance_length, rel=1e-9)
    # Speculation off has no acceptance: "–", never 0.
    off = result.cell(0, 1)
    assert off is not None and off.acceptance_rate is None and off.speedup == pytest.approx(1.0)
    speculative = result.cell(expected_best[1], 1)
    assert speculative is not None and speculative.speedup is not None and speculative.speedup > 1
    assert speculative.speedup_ci95 is not None and speculative.speedup_ci95[0] > 1
    # Every burst is kept in the history, and the tune beside them.
    assert speculative.burst_file is not None and Path(speculative.burst_file).is_file()
    kept = save_tune(result)
    assert list_tunes() == [kept] and load_tune(kept).best == expected_best


def tune_args(tune_sim: TuneSim, *extra: str) -> list[str]:
    return [
        "tune", str(tune_sim.config), "--endpoint", tune_sim.url,
        "--restart-command", shlex.join(tune_sim.restart_command), "--log-file", str(tune_sim.sim.log_file),
        "--health-timeout", "15", "--max-tokens", "24", *extra,
    ]  # fmt: skip


def tune_json(tune_sim: TuneSim, out: Path, *extra: str) -> tuple[dict, str]:
    """`spectop tune` in its own process (its client alone); rerun up to 3 times if its client fell behind."""
    found = tune_sim.config.read_bytes()
    for _ in range(3):
        process = spectop_process(*tune_args(tune_sim, "--json", str(out), *extra))
        stdout, stderr = process.communicate(timeout=900)  # a hang guard
        assert process.returncode == 0, stderr
        if "measuring client fell behind" not in stdout or tune_sim.config.read_bytes() != found:
            break
    return json.loads(out.read_text(encoding="utf-8")), stdout


def test_an_oom_value_fails_with_the_reason_the_sweep_goes_on_and_apply_changes_one_line(
    tune_sim: TuneSim, tmp_path: Path
) -> None:
    write_config(tune_sim.config, k=4)  # the file says 4; k=2 is best at concurrency 1, by 24%
    before = tune_sim.config.read_text(encoding="utf-8")
    before_bytes = tune_sim.config.read_bytes()
    # Off is left out: k=2 beats it by only ~10%, which 8 requests on a loaded machine do not always tell.
    assert expected_rate(tune_sim.config, 2, 1) > 1.2 * expected_rate(tune_sim.config, 4, 1)
    result, stdout = tune_json(
        tune_sim, tmp_path / "tune.json", "--values", "8,2", "--concurrency", "1", "--requests", "8",
        "--apply",
    )  # fmt: skip
    by_value = {outcome["value"]: outcome for outcome in result["outcomes"]}
    assert by_value[8]["started"] is False
    assert "out of memory" in by_value[8]["failure"].lower()
    assert by_value[2]["started"] and by_value[2]["cells"][0]["decode_tokens_per_s"] > 0
    assert "k=8 failed" in stdout
    # --apply: the best value for concurrency 1, exactly one line changed, and the diff shown.
    after = tune_sim.config.read_text(encoding="utf-8")
    assert changed_lines(before, after) == [
        "-num_speculative_tokens = 4   # draft tokens per step",
        "+num_speculative_tokens = 2   # draft tokens per step",
    ]
    # ... and every other byte (line endings, the last newline) is the original's.
    old, new = b"num_speculative_tokens = 4   #", b"num_speculative_tokens = 2   #"
    assert before_bytes.count(old) == 1 and tune_sim.config.read_bytes() == before_bytes.replace(old, new)
    assert "+num_speculative_tokens = 2" in stdout
    assert result["applied"]["value"] == 2
    assert "significantly faster than the file's own k=4" in result["apply_note"]
    assert health(tune_sim.url) == 200


def test_ctrl_c_mid_sweep_leaves_the_original_file_and_a_running_server(tune_sim: TuneSim) -> None:
    """SIGTERM, and a signal while the server restarts: tests/tune/test_tune_stops_promptly.py."""
    original = tune_sim.config.read_bytes()
    process = spectop_process(
        *tune_args(tune_sim, "--values", "0,2,4", "--concurrency", "1", "--requests", "200")
    )
    deadline = time.monotonic() + 60
    while tune_sim.config.read_bytes() == original and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    assert tune_sim.config.read_bytes() != original  # mid-sweep: the file says k=0 now
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 130, stderr
    assert "restored" in stderr
    assert tune_sim.config.read_bytes() == original
    assert health(tune_sim.url) == 200
    page = httpx.get(tune_sim.url + "/metrics", timeout=5).text
    assert 'position="1"' in page  # the server runs the original file again: k=2


# --- ties and --until-separated, on a sim at four times its modelled speed ---------------------------


@pytest.fixture
def fast_sim(tmp_path: Path) -> Iterator[TuneSim]:
    folder = tmp_path / "sim"
    folder.mkdir()
    config = write_config(folder / "config.toml", k=2)
    config.write_text(config.read_text().replace("speed = 2.0\n", "speed = 4.0\n"))
    with running_sim(config) as sim:
        yield sim


def _tune(sim: TuneSim, out: Path, *extra: str) -> tuple[dict, str]:
    return tune_json(sim, out, "--health-timeout", "30", "--concurrency", "1", "--max-tokens", "32", *extra)


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
