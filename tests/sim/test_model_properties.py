"""Properties of the toy tokenizer, its greedy generation and stop strings."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.sim.engine import _apply_stop
from tui.sim.tokens import count_tokens, generate, tokenize


@given(st.text(max_size=300))
def test_tokens_cover_the_text_exactly(text: str) -> None:
    assert "".join(tokenize(text)) == text
    assert count_tokens(text) == len(tokenize(text))


@given(st.text(min_size=1, max_size=80), st.integers(min_value=1, max_value=300))
@settings(max_examples=50)
def test_greedy_generation_is_a_function_of_the_prompt(prompt: str, max_tokens: int) -> None:
    first, natural = generate(prompt, max_tokens)
    second, _ = generate(prompt, max_tokens)
    assert first == second
    assert len(first) <= max_tokens
    assert natural == (len(first) < max_tokens)
    longer, _ = generate(prompt, max_tokens + 50, ignore_eos=True)
    assert longer[: len(first)] == first  # max_tokens only cuts, never changes, the text


@given(
    st.lists(st.sampled_from(["a", " b", " cd", "!", " ef"]), min_size=1, max_size=30),
    st.sampled_from(["b", "cd", "!", "d!", "a b", " "]),
)
def test_stop_strings_cut_before_the_match(tokens: list[str], stop: str) -> None:
    kept, reason = _apply_stop(list(tokens), [stop])
    text = "".join(tokens)
    if stop in text:
        assert reason == stop
        assert "".join(kept) == text[: text.index(stop)]
        assert len(kept) <= len(tokens)
    else:
        assert (kept, reason) == (tokens, None)
