"""Prompt sets: built-in (code, chat, math, prose; English and Chinese) and user JSONL files.

A user file has one JSON value per line: a string (the prompt), `{"prompt": "..."}`
or `{"messages": [{"role": "user", "content": "..."}, ...]}`, each optionally with
`"id"` and `"category"` (the burst reports acceptance and speed per category; the
built-in sets are categories). Blank lines and lines starting with `#` are skipped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import aiofiles
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

PROMPT_SETS_DIR = Path(__file__).resolve().parent / "prompt_sets"
BUILTIN_CATEGORIES = ("code", "chat", "math", "prose")
LANGUAGES = ("en", "zh")
DEFAULT_PROMPT_SET = "mixed"
MAX_PROMPT_FILE_BYTES = 20_000_000
MAX_PROMPTS = 100_000


class PromptSetError(Exception):
    """A prompt set that cannot be used; the message names file, line and field."""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class PromptLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    lang: str | None = None
    category: str | None = Field(None, min_length=1, max_length=40)
    prompt: str | None = Field(None, min_length=1)
    messages: list[ChatMessage] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _one_of(self) -> PromptLine:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError('expected exactly one of "prompt" (a string) or "messages" (a list)')
        return self


@dataclass(frozen=True)
class Prompt:
    id: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    category: str | None = None  # a built-in set's name (code, chat, ...) or the JSONL field

    def chat_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]

    def completion_text(self) -> str:
        if len(self.messages) == 1:
            return self.messages[0][1]
        return "\n\n".join(f"{role}: {content}" for role, content in self.messages) + "\n\nassistant:"


@dataclass(frozen=True)
class PromptSet:
    name: str
    prompts: tuple[Prompt, ...]

    @property
    def digest(self) -> str:
        """Identifies the exact prompts, so only bursts of the same set are compared."""
        payload = json.dumps([[p.id, p.messages] for p in self.prompts], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def builtin_set_names() -> list[str]:
    names = [DEFAULT_PROMPT_SET, *[f"{DEFAULT_PROMPT_SET}-{lang}" for lang in LANGUAGES]]
    for category in BUILTIN_CATEGORIES:
        names += [category, *[f"{category}-{lang}" for lang in LANGUAGES]]
    return names


def parse_prompt_lines(
    text: str, label: str, name: str | None = None, category: str | None = None
) -> PromptSet:
    prompts: list[Prompt] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise PromptSetError(f"{label}: line {number}: not valid JSON: {error.msg}") from error
        if isinstance(data, str):
            data = {"prompt": data}
        if not isinstance(data, dict):
            raise PromptSetError(
                f'{label}: line {number}: expected a string, {{"prompt": ...}} or {{"messages": [...]}}'
            )
        try:
            item = PromptLine.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(line)"
            raise PromptSetError(f"{label}: line {number}: field {where}: {first['msg']}") from error
        if item.messages is not None:
            messages = tuple((m.role, m.content) for m in item.messages)
        else:
            messages = (("user", item.prompt or ""),)
        prompts.append(
            Prompt(id=item.id or f"line-{number}", messages=messages, category=item.category or category)
        )
        if len(prompts) > MAX_PROMPTS:
            raise PromptSetError(f"{label}: more than {MAX_PROMPTS} prompts")
    if not prompts:
        raise PromptSetError(f"{label}: no prompts in the file")
    return PromptSet(name=name or label, prompts=tuple(prompts))


def _builtin(name: str) -> PromptSet | None:
    category, _, lang = name.partition("-")
    if lang and lang not in LANGUAGES:
        return None
    if category == DEFAULT_PROMPT_SET:
        categories: tuple[str, ...] = BUILTIN_CATEGORIES
    elif category in BUILTIN_CATEGORIES:
        categories = (category,)
    else:
        return None
    per_category: list[list[Prompt]] = []
    for item in categories:
        path = PROMPT_SETS_DIR / f"{item}.jsonl"
        lines = [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if not lang or json.loads(line).get("lang") == lang
        ]
        per_category.append(list(parse_prompt_lines("\n".join(lines), str(path), category=item).prompts))
    # Interleave categories so a short burst of "mixed" still covers every kind.
    mixed = [prompt for group in zip(*per_category, strict=False) for prompt in group]
    return PromptSet(name=name, prompts=tuple(mixed))


def _check_size(path: Path, size: int) -> None:
    if size > MAX_PROMPT_FILE_BYTES:
        raise PromptSetError(f"{path}: larger than {MAX_PROMPT_FILE_BYTES} bytes")


def load_prompt_set(spec: str) -> PromptSet:
    """A built-in set by name, or a user JSONL file by path."""
    builtin = _builtin(spec)
    if builtin is not None:
        return builtin
    path = Path(spec)
    if not path.is_file():
        raise PromptSetError(
            f"{spec}: neither a prompt file nor a built-in set ({', '.join(builtin_set_names())})"
        )
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise PromptSetError(f"{path}: cannot read: {error.strerror or error}") from error
    _check_size(path, len(raw))
    return _decode_and_parse(path, raw)


async def aload_prompt_set(spec: str) -> PromptSet:
    """As `load_prompt_set`, reading user files through aiofiles (for the event loop)."""
    builtin = _builtin(spec)
    if builtin is not None:
        return builtin
    path = Path(spec)
    if not path.is_file():
        raise PromptSetError(f"{spec}: neither a prompt file nor a built-in set")
    try:
        async with aiofiles.open(path, "rb") as handle:
            raw = await handle.read(MAX_PROMPT_FILE_BYTES + 1)
    except OSError as error:
        raise PromptSetError(f"{path}: cannot read: {error.strerror or error}") from error
    _check_size(path, len(raw))
    return _decode_and_parse(path, raw)


def _decode_and_parse(path: Path, raw: bytes) -> PromptSet:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise PromptSetError(f"{path}: not UTF-8 text (byte {error.start})") from error
    return parse_prompt_lines(text, str(path), name=path.name)
