"""Greedy equivalence: identical counts and the first divergence position."""

from __future__ import annotations

from tui.bench.report.summary import compare_outputs, first_difference
from tui.bench.results import RequestResult


def _result(arm: str, index: int, chunks: list[str], tokens: list[int] | None = None) -> RequestResult:
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


def test_first_difference() -> None:
    assert first_difference("abc", "abc") is None
    assert first_difference("abc", "abd") == 2
    assert first_difference("ab", "abc") == 2  # one stops early


def test_identical_and_divergent_pairs() -> None:
    a = [
        _result("a", 0, ["Hello", " world"], [1, 1]),
        _result("a", 1, ["The", " cat", " sat", " down"], [1, 1, 1, 1]),
        _result("a", 2, ["x"]),
    ]
    b = [
        _result("b", 0, ["Hello world"], [2]),
        _result("b", 1, ["The cat", " ran", " off"], [2, 1, 1]),
    ]
    outcome = compare_outputs(a, b)
    assert outcome.compared == 2  # index 2 has no B result
    assert outcome.identical == 1
    [divergence] = outcome.divergences
    assert divergence.prompt_id == "p1"
    assert divergence.char_position == len("The cat ")
    assert divergence.token_position == 2  # "The", " cat" before the differing token
    assert divergence.a_snippet.endswith("sat down")
    assert divergence.b_snippet.endswith("ran off")


def test_failed_requests_are_not_compared() -> None:
    failed = _result("b", 0, ["zzz"]).model_copy(update={"error_kind": "timeout"})
    assert compare_outputs([_result("a", 0, ["a"])], [failed]).compared == 0
