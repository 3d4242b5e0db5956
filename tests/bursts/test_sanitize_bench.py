"""No control sequence from a server or a file in the bench report (text) or its exports (CSV, Markdown,
JSON), whether a burst was just run or read back from kept burst files by `spectop bench --compare`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cli.test_sanitize_cli import assert_no_raw_controls, spectop
from tests.test_sanitize import HOSTILE
from tui.bench.report.export import export
from tui.bench.report.summary import burst_summary
from tui.bench.report.text import render_text
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord, RequestResult


def hostile_arm(label: str, reply: str) -> ArmResult:
    """An arm whose server answered with control sequences: in the text, the finish reason, an error."""
    ok = [
        RequestResult(
            arm=label,
            index=index,
            prompt_id=f"p{index}{HOSTILE}",  # prompt sets are files too
            scheduled_s=index,
            sent_s=index,
            ttft_s=0.1,
            e2e_s=1.0,
            chunk_times_s=[0.1, 0.5, 1.0],
            chunk_chars=[4, 4, len(reply)],
            output_tokens=3,
            finish_reason=f"stop{HOSTILE}",
            text=f"same{HOSTILE}{reply}",
        )
        for index in range(3)
    ]
    failed = RequestResult(
        arm=label,
        index=3,
        prompt_id=f"p3{HOSTILE}",
        scheduled_s=3,
        sent_s=3,
        error_kind="http_status",
        http_status=500,
        error=f"HTTP 500: {HOSTILE}",
    )
    return ArmResult(label=label, name=f"{label}{HOSTILE}", url="http://127.0.0.1:1", model=HOSTILE,
                     active_s=3.0, requests=[*ok, failed])  # fmt: skip


def hostile_burst(prompt_set: str = "mixed", replies: tuple[str, ...] = ("A", "Bx")) -> BurstResult:
    settings = BurstSettingsRecord(
        prompt_set=prompt_set, prompt_set_digest=prompt_set, requests=4, concurrency=1, max_tokens=8,
        temperature=0.0,
    )  # fmt: skip
    arms = [hostile_arm(label, HOSTILE + reply) for label, reply in zip("ab", replies, strict=False)]
    return BurstResult(
        started_at=datetime(2026, 12, 1, tzinfo=UTC), duration_s=4.0, settings=settings, arms=arms
    )


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


async def test_bench_compare_prints_no_control_sequence(tmp_path: Path) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(hostile_burst().model_dump_json())
    after.write_text(hostile_burst(replies=("Bx",)).model_dump_json())
    code, out, err = await spectop("bench", "--compare", str(before), str(after))
    assert code == 0, err
    assert "first divergence in p0evil" in out
    assert_no_raw_controls(out + err)


async def test_bench_compare_error_prints_no_control_sequence(tmp_path: Path) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(hostile_burst(f"one{HOSTILE}").model_dump_json())
    after.write_text(hostile_burst("two").model_dump_json())
    code, out, err = await spectop("bench", "--compare", str(before), str(after))
    assert code != 0 and "different prompt sets (oneevil" in err
    assert_no_raw_controls(out + err)
