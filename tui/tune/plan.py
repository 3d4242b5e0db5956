"""What a tune sweeps (the key, its values, the loads) and how one value becomes one edit of the file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from tui.configs.document import ConfigDocument, KeyPath, dotted, parse_key_path
from tui.configs.editing import set_value
from tui.configs.spec_table import TABLE_KEY, normalized, table_or_none
from tui.tune.result import SkippedPoint, SweepPoint

VLLM_K: KeyPath = ("speculative", "num_speculative_tokens")
VLLM_ENABLED: KeyPath = ("speculative", "enabled")
VLLM_TABLE: KeyPath = ("speculative", TABLE_KEY)
REMOVE = object()  # an edit that deletes the key
SGLANG_STEPS: KeyPath = ("speculative_num_steps",)
SGLANG_DRAFT_TOKENS: KeyPath = ("speculative_num_draft_tokens",)
SGLANG_TOPK: KeyPath = ("speculative_eagle_topk",)
SGLANG_ALGORITHM: KeyPath = ("speculative_algorithm",)
DEFAULT_VALUES = (0, 1, 2, 3, 4)
MAX_VALUES = 33


class TunePlanError(ValueError):
    """A sweep that cannot be planned: the message names the flag or key and says why."""


def parse_int_list(text: str, name: str, *, minimum: int) -> tuple[int, ...]:
    """`0,1,2,4` -> (0, 1, 2, 4): distinct, in the order given; TunePlanError names `name`."""
    values: list[int] = []
    for part in filter(None, (item.strip() for item in text.split(","))):
        try:
            number = int(part)
        except ValueError:
            raise TunePlanError(f"{name}: {part!r} is not a whole number") from None
        if number < minimum:
            raise TunePlanError(f"{name}: {number} is below {minimum}")
        if number not in values:
            values.append(number)
    if not values:
        raise TunePlanError(f"{name}: {text.strip()!r} holds no number: expected a list such as 0,1,2")
    if len(values) > MAX_VALUES:
        raise TunePlanError(f"{name}: {len(values)} values given, at most {MAX_VALUES}")
    return tuple(values)


@dataclass(frozen=True)
class TuneKey:
    """How a swept value is read from and written to a document of one kind."""

    path: KeyPath
    style: str  # "vllm" | "sglang" | "plain"
    points: tuple[SweepPoint, ...] = ()  # a grid's points (none for one key)
    skipped: tuple[SkippedPoint, ...] = ()

    @property
    def name(self) -> str:
        return dotted(self.path)

    def label(self, value: int) -> str:
        return f"k={value}"

    def current(self, doc: ConfigDocument) -> int | None:
        """The value the file has now (0 when speculation is off); None when it has none."""
        if self.style == "vllm" and (_get(doc, VLLM_ENABLED) is False or not doc.has(("speculative",))):
            return 0
        if self.style == "sglang" and not _get(doc, SGLANG_ALGORITHM):
            return 0
        return _number(doc, self.path)

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
            if doc.has(VLLM_TABLE):  # the table would clamp or replace the k measured
                edits.append((VLLM_TABLE, REMOVE))
        elif self.style == "sglang":
            if value == 0:
                edits.append((SGLANG_ALGORITHM, None))
            else:
                edits.append((self.path, value))
                if not _get(doc, SGLANG_ALGORITHM):
                    edits.append((SGLANG_ALGORITHM, _get(original, SGLANG_ALGORITHM) or "EAGLE"))
                topk = doc.get(SGLANG_TOPK) if doc.has(SGLANG_TOPK) else 1
                if topk == 1 and doc.has(SGLANG_DRAFT_TOKENS):
                    edits.append((SGLANG_DRAFT_TOKENS, value + 1))
        else:
            edits.append((self.path, value))
        return _needed(doc, edits)


def _get(doc: ConfigDocument, path: KeyPath) -> Any:
    return doc.get(path) if doc.has(path) else None


def _needed(doc: ConfigDocument, edits: list[tuple[KeyPath, Any]]) -> list[tuple[KeyPath, Any]]:
    """The edits that change something (a value of the same type and equal is left alone)."""
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
    return _applied(doc, key.changes(doc, value, original), new_key=key.style != "plain")


def _applied(doc: ConfigDocument, edits: list[tuple[KeyPath, Any]], *, new_key: bool) -> ConfigDocument:
    after = doc
    for path, new in edits:
        after = after.without(path) if new is REMOVE else set_value(after, path, new, new_key=new_key)
    return after


def table_k(table: list[list[int]]) -> int:
    """The k a file running `table` has: the largest (vLLM clamps each range's k to it)."""
    return max(1, *(k for _lo, _hi, k in table))


def file_table(doc: ConfigDocument) -> list[list[int]] | None:
    """The file's k-by-batch-size table in vLLM's list form (None: none, or none that reads)."""
    ranges = table_or_none(doc.get(VLLM_TABLE)) if doc.has(VLLM_TABLE) else None
    return None if ranges is None else normalized(ranges)


def edited_table(doc: ConfigDocument, table: list[list[int]]) -> ConfigDocument:
    """`doc` running `table` (vLLM's `num_speculative_tokens_per_batch_size`); k becomes its largest."""
    edits: list[tuple[KeyPath, Any]] = [(VLLM_K, table_k(table)), (VLLM_TABLE, table)]
    if doc.has(VLLM_ENABLED) and doc.get(VLLM_ENABLED) is not True:
        edits.append((VLLM_ENABLED, True))
    return _applied(doc, _needed(doc, edits), new_key=True)


def check_values(key: TuneKey, values: Sequence[int]) -> None:
    refused = [str(value) for value in values if value > 16]
    if key.style == "vllm" and refused:
        verb = "is" if len(refused) == 1 else "are"
        raise TunePlanError(
            f"--values: {', '.join(refused)} {verb} outside vLLM's 1..16 draft tokens (0 = speculation off)"
        )


GRID_AXES: dict[str, KeyPath] = {"steps": SGLANG_STEPS, "topk": SGLANG_TOPK, "draft": SGLANG_DRAFT_TOKENS}
GRID_MINIMUM = {"steps": 0, "topk": 1, "draft": 2}
MAX_GRID_POINTS = 64


def parse_grid(words: Sequence[str] | str) -> dict[str, tuple[int, ...]]:
    """`steps=1,2,3 topk=1,4 draft=2,4,8` -> {"steps": (1, 2, 3), ...}; axes may be left out."""
    if isinstance(words, str):
        words = [words]
    axes: dict[str, tuple[int, ...]] = {}
    for word in (part for text in words for part in text.split()):
        name, sep, values = word.partition("=")
        name = name.strip().lower()
        if not sep or name not in GRID_AXES:
            raise TunePlanError(
                f"--grid: {word!r} is not AXIS=LIST (axes: steps, topk, draft; e.g. steps=1,2,3 topk=1,4)"
            )
        if name in axes:
            raise TunePlanError(f"--grid: {name} given twice")
        axes[name] = parse_int_list(values, f"--grid {name}", minimum=GRID_MINIMUM[name])
    if "steps" not in axes:
        raise TunePlanError("--grid: steps=LIST is needed (0 = speculation off, the baseline)")
    return axes


def tree_candidates(steps: int, topk: int) -> int:
    """Draft tokens an EAGLE tree of `steps` steps and `topk` branches can offer."""
    return topk + (steps - 1) * topk * topk


def grid_problem(steps: int, topk: int, draft_tokens: int) -> str | None:
    """Why SGLang would not run this point as written (None: it would)."""
    if topk == 1 and draft_tokens != steps + 1:
        return (
            f"with topk 1 SGLang forces draft tokens = steps + 1 = {steps + 1} "
            f"(it would run steps {steps} · topk 1 · draft {steps + 1})"
        )
    if draft_tokens < 2:
        return "SGLang needs at least 2 draft tokens (1 draft + the bonus token)"
    candidates = tree_candidates(steps, topk)
    if draft_tokens - 1 > candidates:
        return (
            f"a tree of {steps} step{'s' if steps != 1 else ''} with topk {topk} offers only {candidates} "
            f"candidates for {draft_tokens - 1} draft tokens (needs draft ≤ {candidates + 1})"
        )
    return None


def _number(doc: ConfigDocument, path: KeyPath) -> int | None:
    value = _get(doc, path)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def file_point(doc: ConfigDocument) -> tuple[int, int, int] | None:
    """The (steps, topk, draft tokens) SGLang runs this file with; None when off or steps are not set."""
    if not _get(doc, SGLANG_ALGORITHM):
        return None
    steps = _number(doc, SGLANG_STEPS)
    if steps is None:
        return None
    topk = _number(doc, SGLANG_TOPK) or 1
    draft = steps + 1 if topk == 1 else _number(doc, SGLANG_DRAFT_TOKENS)
    return None if draft is None else (steps, topk, draft)


@dataclass(frozen=True)
class GridKey(TuneKey):
    """An SGLang steps × topk × draft-tokens grid: value n is `points[n - 1]`, 0 is speculation off."""

    values: tuple[int, ...] = field(default=())  # the swept values, in the grid's order

    @property
    def name(self) -> str:
        return "speculative_num_steps × speculative_eagle_topk × speculative_num_draft_tokens"

    def point(self, value: int) -> SweepPoint | None:
        return next((point for point in self.points if point.value == value), None)

    def label(self, value: int) -> str:
        point = self.point(value)
        return point.label if point is not None else "off" if value == 0 else f"point {value}"

    def current(self, doc: ConfigDocument) -> int | None:
        here = file_point(doc)
        if here is None:
            return None if _get(doc, SGLANG_ALGORITHM) else 0
        return next((p.value for p in self.points if (p.steps, p.topk, p.draft_tokens) == here), None)

    def changes(self, doc: ConfigDocument, value: int, original: ConfigDocument) -> list[tuple[KeyPath, Any]]:
        if value == 0:
            edits: list[tuple[KeyPath, Any]] = [(SGLANG_ALGORITHM, None)]
        else:
            point = self.point(value)
            if point is None:
                raise TunePlanError(f"the grid has no point {value}")
            edits = [(SGLANG_TOPK, point.topk), (SGLANG_STEPS, point.steps)]
            # SGLang derives the draft tokens of a chain: a file without the key keeps going without it.
            if point.topk != 1 or doc.has(SGLANG_DRAFT_TOKENS):
                edits.append((SGLANG_DRAFT_TOKENS, point.draft_tokens))
            if not _get(doc, SGLANG_ALGORITHM):
                edits.append((SGLANG_ALGORITHM, _get(original, SGLANG_ALGORITHM) or "EAGLE"))
        # A file without topk runs a chain: topk 1 needs no new line.
        edits = [edit for edit in edits if not (edit == (SGLANG_TOPK, 1) and not doc.has(SGLANG_TOPK))]
        return _needed(doc, edits)


def grid_key(doc: ConfigDocument, words: Sequence[str] | str) -> GridKey:
    """The `--grid` points: valid ones numbered 1.., the others skipped, the file's own point after them."""
    if doc.kind != "sglang_json":
        raise TunePlanError(f"--grid sweeps SGLang's steps × topk × draft tokens: {doc.kind} is not SGLang")
    axes = parse_grid(words)
    here = file_point(doc)
    file_topk = _number(doc, SGLANG_TOPK) or 1
    file_draft = _number(doc, SGLANG_DRAFT_TOKENS)
    off = 0 in axes["steps"]
    points: list[SweepPoint] = []
    skipped: list[SkippedPoint] = []
    seen: set[tuple[int, int, int]] = set()
    for steps, topk in product([s for s in axes["steps"] if s > 0], axes.get("topk", (file_topk,))):
        drafts = axes.get("draft")
        if drafts is None:  # not swept: a chain's own, else the file's
            drafts = (steps + 1,) if topk == 1 else (file_draft,) if file_draft is not None else ()
            if not drafts:
                raise TunePlanError(f"--grid: topk {topk} needs draft=LIST (the file has no draft tokens)")
        for draft in drafts:
            if (steps, topk, draft) in seen:
                continue
            seen.add((steps, topk, draft))
            problem = grid_problem(steps, topk, draft)
            if problem is not None:
                skipped.append(SkippedPoint(steps=steps, topk=topk, draft_tokens=draft, reason=problem))
            else:
                points.append(SweepPoint(value=len(points) + 1, steps=steps, topk=topk, draft_tokens=draft))
    if not points and not off:
        raise TunePlanError("--grid: no valid point (" + "; ".join(s.line() for s in skipped[:3]) + ")")
    if len(points) > MAX_GRID_POINTS:
        raise TunePlanError(f"--grid: {len(points)} points; at most {MAX_GRID_POINTS}")
    values = ((0,) if off else ()) + tuple(point.value for point in points)
    if here is not None and all((p.steps, p.topk, p.draft_tokens) != here for p in points):
        steps, topk, draft = here
        points.append(SweepPoint(value=len(points) + 1, steps=steps, topk=topk, draft_tokens=draft))
    return GridKey(SGLANG_STEPS, "grid", tuple(points), tuple(skipped), values)
