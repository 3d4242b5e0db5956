"""The bench report and its exports: failure reasons, no raw control sequence, escaped Markdown."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ui"))
from bench_fixtures import MTP_OFF, recorded_arm, recorded_burst

from tests.untrusted import assert_no_raw_controls, hostile_burst
from tui.bench.report.export import CHUNK_FIELDS, export, render_markdown
from tui.bench.report.summary import burst_summary, compare_outputs, first_difference
from tui.bench.report.text import render_text
from tui.bench.results import ArmResult, BurstResult, RequestResult
from tui.tables import Table
from tui.tune.result import TuneResult, ValueOutcome
from tui.tune.result import render_markdown as tune_markdown

REDIRECT = "redirected (302) to https://sso.example/login; not followed (it would carry the API key)"
RETRY = "retry after 3600 s, more than the 30 s spectop waits"


def test_the_text_report_gives_each_reason_with_its_count() -> None:
    arm = recorded_arm("a", MTP_OFF, 1, 0.01, None)
    failed = {1: (302, REDIRECT), 2: (302, REDIRECT), 3: (429, RETRY)}
    requests = [
        r.model_copy(update={"error_kind": "http_status", "http_status": failed[i][0], "error": failed[i][1]})
        if i in failed
        else r
        for i, r in enumerate(arm.requests)
    ]
    burst = recorded_burst([arm.model_copy(update={"requests": requests})])
    text = render_text(burst_summary(burst, with_detail=False))
    assert "A errors: http_status 3" in text
    assert f"2× {REDIRECT}" in text and f"1× {RETRY}" in text
    assert text.index(REDIRECT) < text.index(RETRY)  # the most frequent first


@pytest.mark.parametrize("kind", ["csv", "markdown", "json"])
def test_exports_have_no_raw_control_sequence(tmp_path: Path, kind: str) -> None:
    burst = hostile_burst()
    raw = export(burst, kind, tmp_path / f"burst.{kind}", detail=True).read_text(encoding="utf-8")
    assert_no_raw_controls(raw)
    if kind == "json":  # escaped, not lost
        assert BurstResult.model_validate(json.loads(raw)["burst"]) == burst
    else:
        assert "evil" in raw


def test_a_pipe_or_line_break_in_a_cell_does_not_break_the_markdown_table() -> None:
    assert Table(["figure", "A"], [("endpoint", "a|b`c\nd")]).markdown() == [
        "| figure | A |",
        "| --- | --- |",
        "| endpoint | a\\|b'c⏎d |",
    ]
    arm = recorded_arm("a", MTP_OFF, 1, 0.01, None).model_copy(update={"url": "http://h:1/x|y"})
    assert "| endpoint | http://h:1/x\\|y |" in render_markdown(burst_summary(recorded_burst([arm])))


REQUESTS, TOKENS = 64, 256


def _long_arm(label: str) -> ArmResult:
    requests = []
    for index in range(REQUESTS):
        times = [0.05 + 0.0123456 * i + 0.0001 * index for i in range(TOKENS)]
        requests.append(
            RequestResult(
                arm=label, index=index, prompt_id=f"p{index}", scheduled_s=index * 0.5, sent_s=index * 0.5,
                ttft_s=times[0], e2e_s=times[-1], chunk_times_s=times, chunk_chars=[4] * TOKENS,
                chunk_tokens=[1] * TOKENS, output_tokens=TOKENS, text="word " * 50, finish_reason="length",
            )
        )  # fmt: skip
    return ArmResult(
        label=label, name=label, url=f"http://127.0.0.1:9/{label}", active_s=30.0, requests=requests
    )


def test_the_json_export_keeps_chunk_times_for_json_detail_only(tmp_path: Path) -> None:
    burst = recorded_burst([_long_arm("a"), _long_arm("b")])
    plain = export(burst, "json", tmp_path / "plain.json")
    detailed = export(burst, "json", tmp_path / "detail.json", detail=True)
    plain_size, detail_size = plain.stat().st_size, detailed.stat().st_size
    assert plain_size < 1_000_000 <= detail_size  # the detail is what made a 64-request burst 1 MB
    assert plain_size * 4 < detail_size
    data = json.loads(plain.read_text(encoding="utf-8"))
    request = data["burst"]["arms"][0]["requests"][0]
    assert not set(CHUNK_FIELDS) & set(request) and request["ttft_s"] == burst.arms[0].requests[0].ttft_s
    assert not set(CHUNK_FIELDS) & set(data["a"]["requests_detail"][0])
    assert BurstResult.model_validate(json.loads(detailed.read_text(encoding="utf-8"))["burst"]) == burst


def test_the_tune_markdown_escapes_what_the_server_said() -> None:
    failed = ValueOutcome(value=3, started=False, failure="CUDA OOM | see `dmesg`")
    result = TuneResult(
        started_at=datetime(2026, 12, 1, tzinfo=UTC), config_file="a`b.toml", kind="vllm_toml",
        key="num_speculative_tokens", endpoint="http://x", restart_command=["true"], values=[0, 3],
        concurrencies=[1], original_value=0, baseline_value=0, requests=8, max_tokens=16, prompts="mixed",
        outcomes=[failed],
    )  # fmt: skip
    markdown = tune_markdown(result).splitlines()
    assert "`num_speculative_tokens` in `a'b.toml` on http://x, started 2026-12-01T00:00:00+00:00" in markdown
    assert "| 3 | failed to start |" in markdown
    assert "- k=3 failed: CUDA OOM \\| see 'dmesg'" in markdown


def _greedy(arm: str, index: int, chunks: list[str], tokens: list[int] | None = None) -> RequestResult:
    return RequestResult(
        arm=arm,
        index=index,
        prompt_id=f"p{index}",
        scheduled_s=0.0,
        sent_s=0.0,
        ttft_s=0.01,
        e2e_s=0.1,
        chunk_times_s=[0.01 * (i + 1) for i in range(len(chunks))],
        chunk_chars=[len(c) for c in chunks],
        chunk_tokens=tokens,
        output_tokens=sum(tokens) if tokens else len(chunks),
        text="".join(chunks),
    )


def test_identical_and_divergent_pairs_and_failed_ones_not_compared() -> None:
    assert first_difference("abc", "abc") is None
    assert first_difference("abc", "abd") == 2
    assert first_difference("ab", "abc") == 2  # one stops early
    a = [
        _greedy("a", 0, ["Hello", " world"], [1, 1]),
        _greedy("a", 1, ["The", " cat", " sat", " down"], [1, 1, 1, 1]),
        _greedy("a", 2, ["x"]),
    ]
    b = [_greedy("b", 0, ["Hello world"], [2]), _greedy("b", 1, ["The cat", " ran", " off"], [2, 1, 1])]
    outcome = compare_outputs(a, b)
    assert outcome.compared == 2  # index 2 has no B result
    assert outcome.identical == 1
    [divergence] = outcome.divergences
    assert divergence.prompt_id == "p1"
    assert divergence.char_position == len("The cat ")
    assert divergence.token_position == 2  # "The", " cat" before the differing token
    assert divergence.a_snippet.endswith("sat down")
    assert divergence.b_snippet.endswith("ran off")
    failed = _greedy("b", 0, ["zzz"]).model_copy(update={"error_kind": "timeout"})
    assert compare_outputs([_greedy("a", 0, ["a"])], [failed]).compared == 0
