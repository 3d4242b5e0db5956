"""Greedy equivalence: at temperature 0, did A and B produce the same text for each prompt?"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from tui.bench.results import RequestResult

SNIPPET_BEFORE = 20
SNIPPET_AFTER = 40


class Divergence(BaseModel):
    index: int
    prompt_id: str
    char_position: int = Field(description="first character that differs (0-based)")
    token_position: int | None = Field(
        None, description="tokens before the chunk holding that character (exact with one token per chunk)"
    )
    a_snippet: str
    b_snippet: str


class Equivalence(BaseModel):
    compared: int = 0
    identical: int = 0
    divergences: list[Divergence] = Field(default_factory=list)


def first_difference(a: str, b: str) -> int | None:
    """Index of the first differing character, or None when equal."""
    if a == b:
        return None
    limit = min(len(a), len(b))
    for position in range(limit):
        if a[position] != b[position]:
            return position
    return limit


def tokens_before(result: RequestResult, char_position: int) -> int | None:
    if result.chunk_tokens is None or len(result.chunk_tokens) != len(result.chunk_chars):
        return None
    seen_chars = 0
    tokens = 0
    for chars, count in zip(result.chunk_chars, result.chunk_tokens, strict=True):
        if seen_chars + chars > char_position:
            return tokens
        seen_chars += chars
        tokens += count
    return tokens


def _snippet(text: str, position: int) -> str:
    return text[max(0, position - SNIPPET_BEFORE) : position + SNIPPET_AFTER]


def compare_outputs(a: Sequence[RequestResult], b: Sequence[RequestResult]) -> Equivalence:
    """Pairs requests by index (same prompt, same order) and compares successful ones."""
    b_by_index = {result.index: result for result in b if result.ok}
    outcome = Equivalence()
    for left in sorted((r for r in a if r.ok), key=lambda r: r.index):
        right = b_by_index.get(left.index)
        if right is None or right.prompt_id != left.prompt_id:
            continue
        outcome.compared += 1
        left_text, right_text = left.text, right.text
        if left.text_truncated or right.text_truncated:
            limit = min(len(left_text), len(right_text))
            left_text, right_text = left_text[:limit], right_text[:limit]
        position = first_difference(left_text, right_text)
        if position is None:
            outcome.identical += 1
            continue
        bounds = [t for t in (tokens_before(left, position), tokens_before(right, position)) if t is not None]
        outcome.divergences.append(
            Divergence(
                index=left.index,
                prompt_id=left.prompt_id,
                char_position=position,
                token_position=max(bounds) if bounds else None,
                a_snippet=_snippet(left.text, position),
                b_snippet=_snippet(right.text, position),
            )
        )
    return outcome
