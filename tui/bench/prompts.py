"""Prompt sets: built-in and user JSONL files; `SET@N` (e.g. `mixed@4096`) is SET at about N tokens."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tui.bounded_read import read_text
from tui.format import fmt_rate, fmt_tokens

PROMPT_SETS_DIR = Path(__file__).resolve().parent / "prompt_sets"
BUILTIN_CATEGORIES = ("code", "chat", "math", "prose")
LANGUAGES = ("en", "zh")
DEFAULT_PROMPT_SET = "mixed"
MAX_PROMPT_FILE_BYTES = 20_000_000
MAX_PROMPTS = 100_000
MAX_PROMPT_TOKENS = 1_048_576
CHARS_PER_TOKEN = 4  # a prompt's own text, estimated; the server's count is the check
CHAT_TEMPLATE_TOKENS = 16  # what a chat template adds around a message, about
DRAWN_WITHIN = 0.25  # a file's prompt within 25% of the length is drawn as it is
SIZED_SPEC = re.compile(r"(?P<set>.+)@(?P<tokens>[0-9]+)")
# Filler words most tokenizers (and the simulator's) count as one token each, after a space.
FILLER_TEXT = (
    "the of and to in is was for on that with as by at from his her they this had not are but be "
    "have one all were we when there can an which their said if will each about how up out them "
    "then she many some so these would other into has more two like him see time could no make than "
    "first been its who now people my made over did down only way find use may water long little "
    "very after words called just where most know get through back much before go good new write "
    "our used me man too any day same right look think also around another came come work three "
    "word must because does part even place well such here take why things help put years different "
    "away again off went old number great tell men say small every found still between name should "
    "home big give air line set own under read last never us left end along while might next sound "
    "below saw something thought both few those always looked show large often together asked house "
    "world going want school important until form food keep children feet land side without boy once "
    "animals life enough took sometimes four head above kind began almost live page got earth need"
)


class PromptSetError(Exception):
    """A prompt set that cannot be used; the message names file, line and field."""


class OptionError(ValueError):
    """A burst option that cannot be used (prompt lengths, SLOs, ...); the message names the option."""


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
    sizing: str | None = None  # how a `SET@N` set reached its length (None: the prompts as written)
    prompt_tokens: int | None = None  # the length asked for

    @property
    def digest(self) -> str:
        """Identifies the exact prompts, so only bursts of the same set are compared."""
        payload = json.dumps([[p.id, p.messages] for p in self.prompts], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def builtin_set_names() -> list[str]:
    suffixes = ("", *(f"-{lang}" for lang in LANGUAGES))
    return [base + suffix for base in (DEFAULT_PROMPT_SET, *BUILTIN_CATEGORIES) for suffix in suffixes]


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
        messages = (
            tuple((m.role, m.content) for m in item.messages)
            if item.messages
            else (("user", item.prompt or ""),)
        )
        prompts.append(Prompt(item.id or f"line-{number}", messages, item.category or category))
        if len(prompts) > MAX_PROMPTS:
            raise PromptSetError(f"{label}: more than {MAX_PROMPTS} prompts")
    if not prompts:
        raise PromptSetError(f"{label}: no prompts in the file")
    return PromptSet(name=name or label, prompts=tuple(prompts))


def _builtin(name: str) -> PromptSet | None:
    if name not in builtin_set_names():
        return None
    category, _, lang = name.partition("-")
    categories = BUILTIN_CATEGORIES if category == DEFAULT_PROMPT_SET else (category,)
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


def parse_prompt_tokens(text: str, option: str = "--prompt-tokens") -> tuple[int, ...]:
    """`256,4096,16384` (or `4k,16k`) -> (256, 4096, 16384): prompt lengths in tokens, in order given."""
    lengths: list[int] = []
    for part in filter(str.strip, text.split(",")):
        word = part.strip().lower()
        scale = 1024 if word.endswith("k") else 1
        try:
            tokens = int(word.removesuffix("k")) * scale
        except ValueError:
            raise OptionError(
                f"{option} {part.strip()!r}: expected a number of tokens such as 4096 or 4k"
            ) from None
        if not 1 <= tokens <= MAX_PROMPT_TOKENS:
            raise OptionError(f"{option} {part.strip()!r}: expected 1 to {MAX_PROMPT_TOKENS} tokens")
        if tokens in lengths:
            raise OptionError(f"{option}: {tokens} given twice")
        lengths.append(tokens)
    if not lengths:
        raise OptionError(f"{option}: expected lengths such as 256,4096,16384")
    return tuple(lengths)


TokenCount = Callable[[str], int]  # the server's tokenizer, when it has one (see tui/bench/context.py)
FILLER_SAMPLE_WORDS = 200


def estimated_tokens(prompt: Prompt, count: TokenCount | None = None) -> int:
    """About how many tokens the server will count (its tokenizer's count, else 4 characters a token)."""
    measure = count or (lambda text: -(-len(text) // CHARS_PER_TOKEN))
    return CHAT_TEMPLATE_TOKENS + sum(measure(content) for _role, content in prompt.messages)


def filler_sample() -> str:
    """The filler words whose token count says how many tokens a filler word is, for a tokenizer."""
    rng = random.Random("filler sample")
    words = FILLER_TEXT.split()
    return " " + " ".join(rng.choice(words) for _ in range(FILLER_SAMPLE_WORDS))


def _padded(prompt: Prompt, tokens: int, count: TokenCount | None) -> Prompt:
    """`prompt` with filler words before its last message's text, to about `tokens` in all."""
    missing = tokens - estimated_tokens(prompt, count)
    if missing <= 0:
        return prompt
    per_word = count(filler_sample()) / FILLER_SAMPLE_WORDS if count is not None else 1.0
    rng = random.Random(f"{prompt.id}@{tokens}")
    words = FILLER_TEXT.split()
    filler = " ".join(rng.choice(words) for _ in range(max(1, round(missing / max(per_word, 1e-3)))))
    *head, (role, content) = prompt.messages
    padded = f"Notes (filler for length; ignore): {filler}\n\n{content}"
    return Prompt(id=f"{prompt.id}@{tokens}", messages=(*head, (role, padded)), category=prompt.category)


def sized_prompt_set(
    base: PromptSet, tokens: int, count: TokenCount | None = None, counted_by: str | None = None
) -> PromptSet:
    """`base` at about `tokens` prompt tokens: its prompts near that length, else padded with filler."""
    low, high = tokens * (1 - DRAWN_WITHIN), tokens * (1 + DRAWN_WITHIN)
    lengths = [estimated_tokens(p, count) for p in base.prompts]
    by = f"; lengths by {counted_by}" if counted_by else "; lengths estimated at 4 characters a token"
    drawn = tuple(p for p, n in zip(base.prompts, lengths, strict=True) if low <= n <= high)
    name = f"{base.name}@{tokens}"
    if drawn:
        of = f"{len(drawn)} of {base.name}'s {len(base.prompts)} prompts"
        how = f"drawn by length: {of} are about {tokens} tokens{by}"
        return PromptSet(name=name, prompts=drawn, sizing=how, prompt_tokens=tokens)
    longer = sum(1 for n in lengths if n > high)
    how = f"synthesized: {base.name}'s prompts padded with filler words to about {tokens} tokens{by}"
    if longer:
        how += f" ({longer} already longer, sent as written)"
    prompts = tuple(_padded(p, tokens, count) for p in base.prompts)
    return PromptSet(name=name, prompts=prompts, sizing=how, prompt_tokens=tokens)


def counted_line(asked: int, counted: list[int]) -> str:
    """What the server counted against what was asked; a loud line when it is more than 25% off."""
    if not counted:
        return (
            f"{fmt_tokens(asked)} tokens asked; the server reported no prompt token counts (length unchecked)"
        )
    ordered = sorted(counted)
    middle = ordered[len(ordered) // 2]
    spread = f"{fmt_tokens(ordered[0])}-{fmt_tokens(ordered[-1])}"
    line = f"{fmt_tokens(asked)} tokens asked; the server counted {fmt_tokens(middle)} (median, {spread})"
    if abs(middle - asked) > DRAWN_WITHIN * asked:
        line += f": {fmt_rate(abs(middle - asked) / asked)} off, the context is not the length asked"
    return line


def load_prompt_set(spec: str) -> PromptSet:
    """A built-in set by name, or a user JSONL file by path; `SET@N`: that set at about N tokens."""
    sized = sized_spec(spec)
    if sized is not None:
        return sized_prompt_set(load_prompt_set(sized[0]), sized[1])
    builtin = _builtin(spec)
    if builtin is not None:
        return builtin
    path = Path(spec)
    if not path.is_file():
        raise PromptSetError(
            f"{spec}: neither a prompt file nor a built-in set ({', '.join(builtin_set_names())})"
        )
    text = read_text(path, MAX_PROMPT_FILE_BYTES, PromptSetError, encoding="utf-8-sig")
    return parse_prompt_lines(text, str(path), name=path.name)


def sized_spec(spec: str) -> tuple[str, int] | None:
    """`mixed@4096` -> ("mixed", 4096); None for a plain set (or a file whose own name has an @)."""
    match = SIZED_SPEC.fullmatch(spec)
    if match is None or Path(spec).is_file():
        return None
    tokens = int(match.group("tokens"))
    if not 1 <= tokens <= MAX_PROMPT_TOKENS:
        raise PromptSetError(f"{spec}: expected 1 to {MAX_PROMPT_TOKENS} tokens after @")
    return match.group("set"), tokens
