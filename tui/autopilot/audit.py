"""The audit trail: one JSONL record per decision, in a file of capped size, and its summary.
A record says what triggered the decision, the config diff (secrets masked), the figures before and
after with their intervals, the test's verdict and how sure it was, and whether the change was kept.
Past `max_bytes` the file moves to FILE.1 (the one before is dropped) and a new one starts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from tui.autopilot.policy import Table, proposal_words
from tui.format import fmt_level, fmt_rate_delta, fmt_times
from tui.sanitize import safe_line

Outcome = Literal["started", "proposed", "kept", "rolled_back", "promoted", "left", "waited"]
MAX_BYTES = 5_000_000


class Figure(BaseModel):
    """A measured figure: decode tokens/s per running request, with its interval when known."""

    mean: float | None = None
    low: float | None = None
    high: float | None = None
    samples: int = 0


class AuditRecord(BaseModel):
    time: float = Field(default_factory=time.time)
    outcome: Outcome
    instance: str  # the server (or "fleet")
    trigger: str = ""  # the advice (or the failure) behind the decision
    from_k: int | None = None
    to_k: int | None = None
    to_table: Table | None = None  # a k by batch size (to_k: the file's k with it)
    diff: str = ""  # masked: tui.configs.editing.unified_diff
    predicted: float | None = None  # the advisor's speedup (1.11: +11%)
    before: Figure = Field(default_factory=Figure)
    after: Figure = Field(default_factory=Figure)
    verdict: str | None = None
    gain: float | None = None  # after / before - 1, with its always-valid interval
    gain_low: float | None = None
    gain_high: float | None = None
    sureness: float | None = None
    reason: str = ""

    @property
    def to(self) -> str:
        """ "k=2", or the table: "batch 1: k=3, 2-256: k=1"."""
        return proposal_words(self.to_table or self.to_k)

    def line(self) -> str:
        """One plain line: what, why, how sure."""
        to = self.to.removeprefix("k=")
        change = "" if None in (self.from_k, self.to_k) else f" k={self.from_k}->{to}"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.time))
        gain = "" if self.gain is None else f" {fmt_rate_delta(self.gain)}"
        if self.gain_low is not None and self.gain_high is not None:
            gain += f" (95%: {fmt_rate_delta(self.gain_low)} to {fmt_rate_delta(self.gain_high)})"
        sure = "" if self.sureness is None else f", sure at {fmt_level(self.sureness)}"
        verdict = "" if self.verdict is None else f" · {self.verdict}{gain}{sure}"
        if self.predicted is not None:
            verdict += f" (advisor: {fmt_times(self.predicted)})"
        return safe_line(f"{stamp} {self.instance}:{change} {self.outcome}{verdict} · {self.reason}")


def append(path: Path, record: AuditRecord, max_bytes: int = MAX_BYTES) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > max_bytes:
        path.replace(path.with_name(path.name + ".1"))
    with path.open("a", encoding="utf-8") as file:
        file.write(record.model_dump_json() + "\n")


def read(path: Path) -> tuple[list[AuditRecord], int]:
    """The records of FILE.1 then FILE, and how many lines did not read as one."""
    records, bad = [], 0
    for part in (path.with_name(path.name + ".1"), path):
        if not part.exists():
            continue
        for text in part.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                records.append(AuditRecord.model_validate(json.loads(text)))
            except (ValueError, ValidationError):
                bad += 1
    return records, bad


def summary(records: list[AuditRecord]) -> str:
    """What the autopilot gained against the config it started from: the kept canaries' gains, chained."""
    starts = [r for r in records if r.outcome == "started"]
    kept = [r for r in records if r.outcome == "kept" and r.gain is not None]
    rolled = sum(r.outcome == "rolled_back" for r in records)
    promoted = sum(r.outcome == "promoted" for r in records)
    if starts:  # this run's: against the config it started from
        kept = [r for r in kept if r.time >= starts[-1].time]
    head = f"{len(kept)} change(s) kept, {promoted} promotion(s), {rolled} rolled back"
    if not kept:
        return f"{head}; no gain against the starting config"
    gain, low, high = 1.0, 1.0, 1.0
    for record in kept:
        gain *= 1.0 + (record.gain or 0.0)
        low *= 1.0 + (record.gain_low if record.gain_low is not None else record.gain or 0.0)
        high *= 1.0 + (record.gain_high if record.gain_high is not None else record.gain or 0.0)
    first, last = kept[0].from_k, kept[-1].to
    return (
        f"{head}; k={first} -> {last}: {fmt_rate_delta(gain - 1)} decode tokens/s per request against the "
        f"starting config ({fmt_rate_delta(low - 1)} to {fmt_rate_delta(high - 1)})"
    )
