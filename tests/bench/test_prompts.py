"""Built-in prompt sets and user JSONL files."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tui.bench.context import server_token_counts
from tui.bench.prompts import (
    OptionError,
    PromptSetError,
    builtin_set_names,
    counted_line,
    estimated_tokens,
    load_prompt_set,
    parse_prompt_tokens,
    sized_prompt_set,
)
from tui.sim.tokens import count_tokens


def test_every_builtin_set_loads_with_english_and_chinese_and_an_unknown_name_lists_them() -> None:
    for name in builtin_set_names():
        prompt_set = load_prompt_set(name)
        assert len(prompt_set.prompts) >= 8, name
    chinese = load_prompt_set("code-zh").prompts
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in p.messages[0][1]) for p in chinese)
    english = load_prompt_set("math-en").prompts
    assert all(p.messages[0][1].isascii() for p in english)
    mixed_ids = [p.id for p in load_prompt_set("mixed").prompts[:4]]
    assert [i.split("-")[0] for i in mixed_ids] == ["code", "chat", "math", "prose"]
    with pytest.raises(PromptSetError, match="code-zh"):
        load_prompt_set("no-such-set")


def test_user_jsonl_prompts_and_messages(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '"just a string"\n'
        "# a comment\n"
        "\n"
        '{"id": "q1", "prompt": "what is MTP?"}\n'
        '{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}\n',
        encoding="utf-8",
    )
    prompt_set = load_prompt_set(str(path))
    assert [p.id for p in prompt_set.prompts] == ["line-1", "q1", "line-5"]
    assert prompt_set.prompts[2].chat_messages() == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert prompt_set.prompts[2].completion_text().endswith("assistant:")
    assert prompt_set.digest == load_prompt_set(str(path)).digest


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", "line 2: not valid JSON"),
        ('{"prompt": "a", "messages": [{"role": "user", "content": "b"}]}', "line 2: field (line)"),
        ('{"messages": [{"role": "robot", "content": "b"}]}', "line 2: field messages.0.role"),
        ('{"promt": "typo"}', "line 2: field promt"),
        ("[1, 2]", 'line 2: expected a string, {"prompt"'),
    ],
)
def test_bad_lines_name_file_line_and_field(tmp_path: Path, line: str, expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('"fine"\n' + line + "\n", encoding="utf-8")
    with pytest.raises(PromptSetError) as error:
        load_prompt_set(str(path))
    assert str(path) in str(error.value)
    assert expected in str(error.value)


def test_a_set_at_a_length_is_padded_to_about_that_many_tokens_and_says_how() -> None:
    sized = load_prompt_set("mixed@4096")
    assert sized.name == "mixed@4096" and sized.prompt_tokens == 4096
    assert sized.sizing is not None and sized.sizing.startswith("synthesized")
    plain = load_prompt_set("mixed")
    assert len(sized.prompts) == len(plain.prompts)
    for padded, original in zip(sized.prompts, plain.prompts, strict=True):
        text = padded.messages[-1][1]
        assert text.endswith(original.messages[-1][1])  # the question stays last
        assert 0.9 * 4096 <= count_tokens(text) <= 1.1 * 4096
    assert sized.digest == load_prompt_set("mixed@4096").digest != load_prompt_set("mixed@256").digest
    short = sized_prompt_set(plain, 8)  # already longer: sent as written, and said
    assert short.prompts == plain.prompts and "already longer" in (short.sizing or "")
    assert "4,096 tokens asked; the server counted 3,990 (median" in counted_line(4096, [3990, 3980, 4000])
    assert "off, the context is not the length asked" in counted_line(4096, [1000, 1100])
    assert "unchecked" in counted_line(4096, [])


def test_a_file_with_prompts_of_the_length_draws_them(tmp_path: Path) -> None:
    path = tmp_path / "lengths.jsonl"
    path.write_text('"short"\n"' + "word " * 400 + '"\n', encoding="utf-8")
    drawn = load_prompt_set(f"{path}@512")
    assert [p.id for p in drawn.prompts] == ["line-2"]
    assert (drawn.sizing or "").startswith("drawn by length: 1 of lengths.jsonl's 2 prompts")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("256,4096,16384", (256, 4096, 16384)), ("4k, 16k", (4096, 16384)), ("512", (512,))],
)
def test_prompt_lengths_parse(text: str, expected: tuple[int, ...]) -> None:
    assert parse_prompt_tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("abc", "expected a number"), ("0", "1 to"), ("4,4", "twice")]
)
def test_bad_prompt_lengths_name_the_option(text: str, expected: str) -> None:
    with pytest.raises(OptionError, match=expected):
        parse_prompt_tokens(text)


def test_with_the_servers_tokenizer_the_padding_reaches_the_length_in_its_tokens() -> None:
    def count(text: str) -> int:  # a tokenizer that splits every word in three
        return 3 * len(text.split())

    sized = sized_prompt_set(load_prompt_set("chat"), 3000, count, counted_by="the server's tokenizer")
    assert (sized.sizing or "").endswith("lengths by the server's tokenizer")
    for prompt in sized.prompts:
        assert abs(estimated_tokens(prompt, count) - 3000) < 0.05 * 3000
    assert "estimated at 4 characters a token" in (load_prompt_set("chat@3000").sizing or "")


async def test_a_server_without_a_tokenizer_endpoint_is_sized_by_the_estimate() -> None:
    def no_tokenizer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": "not found"})

    def tokenizer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"tokens": [7, 8, 9]})  # llama.cpp's answer (vLLM's has "count")

    for handler, expected in ((no_tokenizer, None), (tokenizer, {"a b": 3})):
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            assert await server_token_counts(client, "http://x/tokenize", ["a b"]) == expected
