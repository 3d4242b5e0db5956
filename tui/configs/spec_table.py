"""vLLM's k by batch size (`num_speculative_tokens_per_batch_size`, Dynamic SD, vllm PR #32374).
The list form `[[lo, hi, k], ...]` (inclusive ranges, k = 0 allowed) and the early dict form
`{"1-16": 3}` are read alike. The k of a batch size follows vLLM 0.32's dense lookup: a gap (and the
tail) carries the previous range's k forward, and every k is clamped to `num_speculative_tokens`."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

TABLE_KEY = "num_speculative_tokens_per_batch_size"
# A written table's last range ends here unless the file sets max_num_seqs (vLLM's default on GPUs); vLLM
# carries the last k on to its own max_num_seqs either way.
VLLM_DEFAULT_MAX_NUM_SEQS = 256
Range = tuple[int, int, int]  # (lo, hi, k): batch sizes lo..hi inclusive run k draft tokens

_DICT_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


class TableError(ValueError):
    """A value that is not a table in either form: the message says which entry and why."""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_table(value: Any) -> list[Range]:
    """The ranges of a table in either form, in the order written; TableError for an entry vLLM refuses."""
    entries: list[tuple[Any, Any, Any]] = []
    if isinstance(value, dict):
        for key, k in value.items():
            match = _DICT_RANGE.match(str(key))
            if match is None:
                raise TableError(f"range {key!r}: expected 'LO-HI' such as '1-16'")
            lo = int(match.group(1))
            entries.append((lo, int(match.group(2) or lo), k))
    elif isinstance(value, list):
        for entry in value:
            if not isinstance(entry, list | tuple) or len(entry) != 3:
                raise TableError(f"entry {entry!r}: expected [lo, hi, k] (an inclusive batch-size range)")
            entries.append((entry[0], entry[1], entry[2]))
    else:
        raise TableError("expected a list of [lo, hi, k] ranges, e.g. [[1, 4, 2], [5, 256, 0]]")
    if not entries:
        raise TableError("the table is empty: give at least one [lo, hi, k] range starting at 1")
    ranges: list[Range] = []
    for lo, hi, k in entries:
        if not (_whole(lo) and _whole(hi) and _whole(k)):
            raise TableError(f"entry [{lo}, {hi}, {k}]: lo, hi and k must be whole numbers")
        if lo < 1 or hi < 1:
            raise TableError(f"range {lo}-{hi}: batch sizes start at 1")
        if lo > hi:
            raise TableError(f"range {lo}-{hi}: its start is above its end")
        if k < 0:
            raise TableError(f"range {lo}-{hi}: k = {k} is below 0 (0 switches speculation off)")
        ranges.append((lo, hi, k))
    return ranges


def table_or_none(value: Any) -> list[Range] | None:
    try:
        return read_table(value)
    except TableError:
        return None


@dataclass(frozen=True)
class TableProblem:
    id: str
    severity: Literal["error", "warning", "info"]  # error: vLLM refuses to start
    message: str
    fix: str


def table_problems(ranges: Sequence[Range], max_k: int | None) -> list[TableProblem]:
    """What vLLM refuses (overlaps, a first range not at 1) or silently does (gaps, k clamped)."""
    problems: list[TableProblem] = []
    ordered = sorted(ranges)
    for before, after in itertools.pairwise(ordered):
        if after[0] <= before[1]:
            problems.append(
                TableProblem(
                    "spec-table-overlap",
                    "error",
                    f"ranges {before[0]}-{before[1]} and {after[0]}-{after[1]} overlap: vLLM refuses the "
                    'table ("Batch-size ranges must be non-overlapping")',
                    f"start the second range at {before[1] + 1}",
                )
            )
    if ordered and ordered[0][0] != 1:
        problems.append(
            TableProblem(
                "spec-table-start",
                "error",
                f"the first range starts at batch size {ordered[0][0]}, not 1: vLLM refuses the table "
                "(every batch size needs a k)",
                f"add [1, {ordered[0][0] - 1}, K] or start the first range at 1",
            )
        )
    gaps = [(before, after) for before, after in itertools.pairwise(ordered) if after[0] > before[1] + 1]
    if gaps:
        listed = ", ".join(f"{b[1] + 1}-{a[0] - 1} run k={b[2]}" for b, a in gaps)
        problems.append(
            TableProblem(
                "spec-table-gap",
                "info",
                f"batch sizes in no range take the previous range's k: {listed}",
                "give those batch sizes a range of their own if another k suits them",
            )
        )
    above = [r for r in ordered if max_k is not None and r[2] > max_k]
    if above:
        listed = ", ".join(f"{lo}-{hi}: k={k}" for lo, hi, k in above)
        problems.append(
            TableProblem(
                "spec-table-k-above-max",
                "warning",
                f"{listed} above num_speculative_tokens = {max_k}: vLLM clamps it to {max_k} "
                "(buffers are sized by num_speculative_tokens)",
                f"raise num_speculative_tokens to {max(r[2] for r in above)} or lower those k",
            )
        )
    return problems


def k_for_batch(ranges: Sequence[Range], batch_size: int, max_k: int) -> int:
    """The k vLLM schedules at `batch_size`: the covering or previous range's, clamped to `max_k`."""
    ordered = sorted(ranges)
    if not ordered:
        return max_k
    k = next((k for lo, _hi, k in reversed(ordered) if lo <= batch_size), ordered[0][2])
    return max(0, min(max_k, k))


def normalized(ranges: Sequence[Range]) -> list[list[int]]:
    """The list form vLLM 0.32 takes (`[[lo, hi, k], ...]`, sorted): what launch writes."""
    return [list(entry) for entry in sorted(ranges)]


def table_text(ranges: Sequence[Range], max_k: int | None = None) -> str:
    """ "batch 1-4: k=2, 5-256: k=0" (k clamped to `max_k` when given)."""
    parts = []
    for lo, hi, k in sorted(ranges):
        shown = k if max_k is None else min(k, max_k)
        parts.append(f"{lo}-{hi}: k={shown}" if lo != hi else f"{lo}: k={shown}")
    return ("batch " if parts else "") + ", ".join(parts)


def table_from_steps(steps: Sequence[tuple[int, int | None]], top: int) -> list[list[int]]:
    """A table from (k, up to batch size) steps in load order (None: every larger batch), the last range
    ending at `top` (the server's max_num_seqs): `[(2, 4), (0, None)]` -> [[1, 4, 2], [5, top, 0]]."""
    table: list[list[int]] = []
    lo = 1
    for k, up_to in steps:
        hi = top if up_to is None else min(up_to, top)
        if hi < lo:
            continue
        table.append([lo, hi, k])
        lo = hi + 1
    if table and table[-1][1] < top:
        table[-1][1] = top
    return table
