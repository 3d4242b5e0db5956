"""Text fitted to a width: whole, or shortened by whole words or items, never cut mid-word or mid-number."""

from __future__ import annotations

import pytest

from tui.fit_text import fit_items, fit_words

ALERT = "acceptance 46% below 50%; mean length 2.40→1.60"


@pytest.mark.parametrize(
    ("text", "width", "shown"),
    [
        (ALERT, len(ALERT), ALERT),
        (ALERT, 40, "acceptance 46% below 50%; mean length…"),
        (ALERT, 33, "acceptance 46% below 50%; mean…"),
        (ALERT, 30, "acceptance 46% below…"),  # "50%…" would read as a figure cut
        (ALERT, 11, "acceptance…"),
        (ALERT, 10, "…"),
        (ALERT, 0, ""),
        ("drafting slows; mean length", 15, "drafting slows…"),  # a word before its punctuation is whole
        ("version 1.6 of it", 11, "version…"),  # "1." is not a word
        (  # an error keeps its first whole words
            "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1000)",
            55,
            "[SSL: WRONG_VERSION_NUMBER] wrong version number…",
        ),
    ],
)
def test_words_are_kept_whole_and_an_ellipsis_says_more_followed(text: str, width: int, shown: str) -> None:
    assert fit_words(text, width) == shown
    assert len(shown) <= width


def test_items_are_kept_whole_from_the_first_the_rest_dropped() -> None:
    items = ["mtp-on", "vllm", "deepseek-ai/DeepSeek-V3", "up", "window 14/60 s"]
    assert fit_items(items, 100) == items
    assert fit_items(items, 52) == items[:4]
    assert fit_items(items, 20) == items[:2]
    assert fit_items(["a-long-name with words"], 12) == ["a-long-name…"]
