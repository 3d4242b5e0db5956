"""Built-in prompt sets and user JSONL files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.bench.prompts import PromptSetError, builtin_set_names, load_prompt_set


def test_every_builtin_set_loads_with_english_and_chinese() -> None:
    for name in builtin_set_names():
        prompt_set = load_prompt_set(name)
        assert len(prompt_set.prompts) >= 8, name
    chinese = load_prompt_set("code-zh").prompts
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in p.messages[0][1]) for p in chinese)
    english = load_prompt_set("math-en").prompts
    assert all(p.messages[0][1].isascii() for p in english)
    mixed_ids = [p.id for p in load_prompt_set("mixed").prompts[:4]]
    assert [i.split("-")[0] for i in mixed_ids] == ["code", "chat", "math", "prose"]


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


def test_unknown_set_lists_the_builtins() -> None:
    with pytest.raises(PromptSetError, match="code-zh"):
        load_prompt_set("no-such-set")
