"""A toy tokenizer and text generator; greedy output is a function of the prompt alone (the same with
speculation on and off)."""

from __future__ import annotations

import hashlib
import random
import re

_TOKEN_RE = re.compile(r"\s*[A-Za-z0-9_]+|\s*[^\sA-Za-z0-9_]|\s+$")
_CODE_SYMBOLS = set("{}()[];=<>_:#.,*+-/\"'")
_CODE_KEYWORDS = {
    "def", "return", "class", "import", "for", "while", "if", "else", "self", "fn", "let", "const", "int",
    "void", "public", "struct", "lambda", "async", "await", "None", "true",
}  # fmt: skip

PROSE_WORDS = (
    "the", "model", "drafts", "a", "few", "tokens", "and", "the", "target", "verifies", "them", "in", "one",
    "pass", "so", "throughput", "rises", "when", "acceptance", "is", "high", "while", "latency", "of", "each",
    "step", "grows", "with", "batch", "size", "speculative", "decoding", "keeps", "output", "unchanged",
    "because", "every", "token", "is", "checked", "by", "main", "network", "before", "it", "leaves", "server",
    ".", ",", "this", "means", "that", "we", "can", "measure", "rate", "per", "position", "over", "time",
)  # fmt: skip
CODE_WORDS = (
    "def", " ", "(", ")", ":", "\n", "    ", "return", "self", ".", "value", "=", "None", "if", "not", "in",
    "for", "item", "items", "key", "cache", "[", "]", ",", "lock", "with", "else", "+", "1", "0", "len",
    "result", "append", "class", "import", "time", "expires", "get", "set", "#", "while", "True", "break",
)  # fmt: skip


def tokenize(text: str) -> list[str]:
    """Split text into toy tokens (a word or one symbol, with its leading whitespace)."""
    return _TOKEN_RE.findall(text)


def count_tokens(text: str) -> int:
    return len(tokenize(text))


def code_score(text: str) -> float:
    """0..1: how much the text looks like source code."""
    if not text:
        return 0.0
    symbols = sum(1 for char in text if char in _CODE_SYMBOLS) / len(text)
    words = re.findall(r"[A-Za-z_]+", text)
    keywords = sum(1 for word in words if word in _CODE_KEYWORDS) / max(1, len(words))
    return min(1.0, 4.0 * symbols + 2.0 * keywords)


def content_factor(text: str, effect: float = 1.0) -> float:
    """Multiplier on the acceptance probabilities: code and repeated text accept more than prose."""
    words = re.findall(r"\w+", text.lower())
    repetition = 1.0 - len(set(words)) / len(words) if len(words) >= 4 else 0.0  # share of repeated words
    raw = 0.3 * code_score(text) + 0.3 * repetition - 0.1
    return max(0.6, min(1.3, 1.0 + effect * raw))


def _rng_for(prompt: str, temperature: float, seed: int | None) -> random.Random:
    if temperature > 0.0 and seed is None:
        return random.Random()
    material = prompt if temperature <= 0.0 else f"{prompt}\x00{seed}\x00{temperature:.6f}"
    return random.Random(
        int.from_bytes(hashlib.sha256(material.encode("utf-8", "replace")).digest()[:8], "big")
    )


def generate(
    prompt: str,
    max_tokens: int,
    *,
    temperature: float = 0.0,
    seed: int | None = None,
    ignore_eos: bool = False,
) -> tuple[list[str], bool]:
    """The output tokens for a prompt, and whether generation ended naturally (EOS) before max_tokens."""
    rng = _rng_for(prompt, temperature, seed)
    natural_length = 48 + rng.randrange(464)
    length = max_tokens if ignore_eos else min(max_tokens, natural_length)
    vocabulary = CODE_WORDS if code_score(prompt) > 0.35 else PROSE_WORDS
    prompt_words = re.findall(r"[A-Za-z_]{3,}", prompt)[:200]
    out: list[str] = []
    for _ in range(length):
        reuse = bool(prompt_words) and rng.random() < 0.25
        word = rng.choice(prompt_words) if reuse else rng.choice(vocabulary)
        out.append(word if word in ("\n", "    ", ".", ",", "(", ")", ":", "[", "]") else " " + word)
    return out, length < max_tokens


def wrong_token(token: str, salt: int) -> str:
    """A plausible but different token (what a lossy verifier lets through)."""
    choices = [word for word in PROSE_WORDS if " " + word != token]
    return " " + choices[salt % len(choices)]
