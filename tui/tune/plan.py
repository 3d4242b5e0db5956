"""What a tune sweeps: the key, its values, the loads; and how one value becomes one edit of the file.

The key defaults by config kind:

* vLLM-style TOML: `speculative.num_speculative_tokens`; value 0 is speculation off, written as
  `speculative.enabled = false` (the token count is left as it was, so it comes back when turned on);
* SGLang JSON: `speculative_num_steps`, with `speculative_num_draft_tokens` kept at steps + 1 when
  `speculative_eagle_topk` is 1 (SGLang forces it); value 0 is `speculative_algorithm = null`;
* anything else: the numeric key given explicitly (e.g. a llama.cpp launch file's `draft_max`).

Only the lines of the keys involved change; every other byte stays (round-trip documents).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tui.configs.document import ConfigDocument, KeyPath, dotted, parse_key_path
from tui.configs.editing import set_value
from tui.configs.errors import ConfigError

VLLM_K: KeyPath = ("speculative", "num_speculative_tokens")
VLLM_ENABLED: KeyPath = ("speculative", "enabled")
SGLANG_STEPS: KeyPath = ("speculative_num_steps",)
SGLANG_DRAFT_TOKENS: KeyPath = ("speculative_num_draft_tokens",)
SGLANG_TOPK: KeyPath = ("speculative_eagle_topk",)
SGLANG_ALGORITHM: KeyPath = ("speculative_algorithm",)
DEFAULT_VALUES = (0, 1, 2, 3, 4)
DEFAULT_CONCURRENCIES = (1, 8, 32)
MAX_VALUES = 33


class TunePlanError(ValueError):
    """A sweep that cannot be planned: the message names the flag or key and says why."""


def parse_int_list(text: str, name: str, *, minimum: int) -> tuple[int, ...]:
    """`0,1,2,4` -> (0, 1, 2, 4): distinct, in the order given; TunePlanError names `name`."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            number = int(part)
        except ValueError:
            raise TunePlanError(f"{name}: {part!r} is not a whole number") from None
        if number < minimum:
            raise TunePlanError(f"{name}: {number} is below {minimum}")
        if number not in values:
            values.append(number)
    if not values:
        raise TunePlanError(f"{name}: expected a comma-separated list such as 0,1,2")
    if len(values) > MAX_VALUES:
        raise TunePlanError(f"{name}: at most {MAX_VALUES} values")
    return tuple(values)


@dataclass(frozen=True)
class TuneKey:
    """How a swept value is read from and written to a document of one kind."""

    path: KeyPath
    style: str  # "vllm" | "sglang" | "plain"

    @property
    def name(self) -> str:
        return dotted(self.path)

    def current(self, doc: ConfigDocument) -> int | None:
        """The value the file has now (0 when speculation is off); None when it has none."""
        if self.style == "vllm":
            if doc.has(VLLM_ENABLED) and doc.get(VLLM_ENABLED) is False:
                return 0
            if not doc.has(("speculative",)):
                return 0
            value = doc.get(self.path) if doc.has(self.path) else None
        elif self.style == "sglang":
            if not (doc.get(SGLANG_ALGORITHM) if doc.has(SGLANG_ALGORITHM) else None):
                return 0
            value = doc.get(self.path) if doc.has(self.path) else None
        else:
            value = doc.get(self.path) if doc.has(self.path) else None
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return value

    def changes(self, doc: ConfigDocument, value: int, original: ConfigDocument) -> list[tuple[KeyPath, Any]]:
        """The (key, value) edits that make the file say `value`; [] when it already does."""
        edits: list[tuple[KeyPath, Any]] = []
        if self.style == "vllm":
            if value == 0:
                edits.append((VLLM_ENABLED, False))
            else:
                edits.append((self.path, value))
                if doc.has(VLLM_ENABLED) and doc.get(VLLM_ENABLED) is not True:
                    edits.append((VLLM_ENABLED, True))
        elif self.style == "sglang":
            if value == 0:
                edits.append((SGLANG_ALGORITHM, None))
            else:
                edits.append((self.path, value))
                if not (doc.get(SGLANG_ALGORITHM) if doc.has(SGLANG_ALGORITHM) else None):
                    algorithm = original.get(SGLANG_ALGORITHM) if original.has(SGLANG_ALGORITHM) else None
                    edits.append((SGLANG_ALGORITHM, algorithm or "EAGLE"))
                topk = doc.get(SGLANG_TOPK) if doc.has(SGLANG_TOPK) else 1
                if topk == 1 and doc.has(SGLANG_DRAFT_TOKENS):
                    edits.append((SGLANG_DRAFT_TOKENS, value + 1))
        else:
            edits.append((self.path, value))
        return [(path, new) for path, new in edits if not (doc.has(path) and _same(doc.get(path), new))]


def _same(old: Any, new: Any) -> bool:
    return type(old) is type(new) and old == new


def default_key(doc: ConfigDocument, explicit: str | None = None) -> TuneKey:
    """The key to sweep: `explicit` when given, else the kind's default; TunePlanError when none fits."""
    if explicit:
        path = parse_key_path(explicit)
        if doc.kind == "vllm_toml" and path == VLLM_K:
            return TuneKey(path, "vllm")
        if doc.kind == "sglang_json" and path == SGLANG_STEPS:
            return TuneKey(path, "sglang")
        if not doc.has(path):
            raise TunePlanError(f"--key {explicit}: the file has no such key")
        value = doc.get(path)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TunePlanError(f"--key {explicit}: its value {value!r} is not a whole number")
        return TuneKey(path, "plain")
    if doc.kind == "vllm_toml":
        if doc.has(VLLM_K) or doc.has(("speculative",)):
            return TuneKey(VLLM_K, "vllm")
        raise TunePlanError("the file has no [speculative] section: name the key to sweep with --key")
    if doc.kind == "sglang_json":
        return TuneKey(SGLANG_STEPS, "sglang")
    raise TunePlanError(f"a {doc.kind} file has no speculative key to sweep: name one with --key")


def edited(doc: ConfigDocument, key: TuneKey, value: int, original: ConfigDocument) -> ConfigDocument:
    """`doc` with `value` written (validated like `spectop config set`); ConfigError when invalid."""
    after = doc
    for path, new in key.changes(doc, value, original):
        after = set_value(after, path, new, new_key=key.style != "plain")
    return after


def check_values(key: TuneKey, values: Sequence[int]) -> None:
    if key.style == "vllm" and any(value > 16 for value in values):
        raise TunePlanError("--values: vLLM takes 1..16 draft tokens (0 = speculation off)")


__all__ = ["ConfigError", "TuneKey", "TunePlanError", "default_key", "edited", "parse_int_list"]
