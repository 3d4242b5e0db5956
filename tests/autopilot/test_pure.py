"""The autopilot's pure parts: the sequential test, the limits, the audit trail and its summary."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tui.autopilot import audit
from tui.autopilot.audit import AuditRecord
from tui.autopilot.policy import MIN_SAMPLES, Limits, Sustained, errors_rose, gate, judge


def until_clear(true_gain: float, spread: float, seed: int, limit: int = 400) -> tuple[str, int]:
    rng, samples = random.Random(seed), []
    for _ in range(limit):
        samples.append(true_gain + rng.gauss(0.0, spread))
        verdict = judge(samples, 0.05)
        if verdict.verdict != "inconclusive":
            return verdict.verdict, len(samples)
    return "inconclusive", limit


@pytest.mark.parametrize(
    ("true_gain", "expected"), [(0.10, "better"), (-0.10, "worse"), (0.0, "no difference")]
)
def test_the_sequential_test_is_wrong_at_most_5_percent_of_the_time(true_gain: float, expected: str) -> None:
    """However often it is looked at (after every sample), as an always-valid 95% sequence must be."""
    verdicts = [until_clear(true_gain, 0.05, seed)[0] for seed in range(200)]
    assert verdicts.count(expected) >= 190


def test_no_verdict_from_too_few_samples_and_its_words_say_how_sure() -> None:
    assert judge([0.2] * (MIN_SAMPLES - 1), 0.05).verdict == "inconclusive"
    clear = judge([0.1, 0.12, 0.09, 0.11, 0.1, 0.08, 0.1, 0.1], 0.05)
    assert clear.verdict == "better" and clear.sureness is not None and clear.sureness > 0.95
    assert clear.words() == "better: +11% (95% +9% to +12%, 8 intervals; sure at 99.9%)"
    assert judge([0.1, -0.1] * 4, 0.05).verdict == "inconclusive"
    assert judge([-0.01, 0.0, 0.01, 0.0] * 2, 0.05, non_inferiority=True).verdict == "not worse"


def test_the_limits() -> None:
    limits = Limits(max_changes_per_hour=2, quiet_s=60, min_healthy=2)
    assert gate(limits, [], 1000.0, 4, 4) is None
    assert "quiet period" in (gate(limits, [980.0], 1000.0, 4, 4) or "")
    assert "2 changes in the last hour" in (gate(limits, [100.0, 200.0], 1000.0, 4, 4) or "")
    assert gate(limits, [100.0, 200.0], 100.0 + 3600.0, 4, 4) is None
    assert "fewer than 2" in (gate(limits, [], 1000.0, 2, 2) or "")
    assert "only 3 of 4" in (gate(limits, [], 1000.0, 3, 4) or "")
    held = Sustained(30.0)
    assert held.observe(2, 0.0) == 0.0 and not held.held(20.0)
    assert held.observe(3, 25.0) == 0.0 and not held.held(50.0) and held.held(55.0)
    assert held.observe(None, 60.0) is None and not held.held(100.0)


def test_errors_rose_only_when_surely_more_answers_failed() -> None:
    assert errors_rose((30.0, 100.0), (2.0, 300.0)) == (
        "errors rose: 30% of answers failed, 1% on the reference (sure at 99.9%)"
    )
    assert errors_rose((3.0, 100.0), (2.0, 300.0)) is None  # 3% against 0.7%: not sure enough
    assert errors_rose((5.0, 10.0), (0.0, 300.0)) is None  # too few answers to tell
    assert errors_rose((0.0, 100.0), (0.0, 300.0)) is None


def test_the_trail_is_capped_and_summarised(tmp_path: Path) -> None:
    path = tmp_path / "autopilot.jsonl"
    audit.append(path, AuditRecord(time=1.0, outcome="started", instance="a", from_k=4))
    kept = AuditRecord(
        time=2.0, outcome="kept", instance="a", from_k=4, to_k=2, gain=0.1, gain_low=0.05, gain_high=0.15,
        verdict="better", sureness=0.999, diff="-k = 4\n+k = 2\n",
    )  # fmt: skip
    for _ in range(3):
        audit.append(path, kept, max_bytes=400)
    path.write_text(path.read_text() + "not json\n")
    records, bad = audit.read(path)
    assert bad == 1 and path.with_name("autopilot.jsonl.1").exists()
    assert "kept · better +10% (95%: +5% to +15%), sure at 99.9%" in kept.line()
    assert audit.summary([records[0], kept]).endswith(
        "k=4 -> k=2: +10% decode tokens/s per request against the starting config (+5% to +15%)"
    )
    nothing = "0 change(s) kept, 0 promotion(s), 0 rolled back; no gain against the starting config"
    assert audit.summary([]) == nothing
