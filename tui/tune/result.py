"""A tune's result (the on-disk `spectop-tune/1` format), its analysis and its renderings.

Per (value, concurrency) cell: the burst's figures, and the speedup over the baseline value at the
same concurrency (pooled decode tokens/s ratio with its bootstrap 95% interval, from
`tui.bench.report.comparison`). Then the best value per concurrency, the schedule it implies
(vLLM's `num_speculative_tokens_per_batch_size` style: which k up to which batch size) and the
break-even concurrency, where speculation stops paying. A figure that could not be measured is None.

A grid sweep (SGLang steps × topk × draft tokens) numbers its points: `value` n is `points` entry n
(0 is speculation off), rows are labelled by the point ("steps 3 · topk 1 · draft 4") and the CSV
carries its parts; `skipped` lists the grid's points SGLang would not run, with the reason.
"""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from tui.bench.burst_store import bursts_dir
from tui.bench.report import arm_summary, comparison
from tui.bench.results import ArmResult
from tui.bench.stats import percentile, pooled_rate
from tui.format import UNKNOWN as DASH
from tui.format import fmt_latency, fmt_length, fmt_rate, fmt_times, fmt_times_interval, fmt_tokens_per_s
from tui.sanitize import json_safe, safe_line

CSV_FIELDS = (
    "value", "concurrency", "ok", "requests", "errors", "decode_tokens_per_s", "output_tokens_per_s",
    "ttft_p50_s", "ttft_p95_s", "tpot_p50_s", "acceptance_rate", "mean_acceptance_length",
    "per_position_acceptance", "speedup", "speedup_ci_low", "speedup_ci_high", "best", "failure",
    "burst_file", "label", "steps", "topk", "draft_tokens",
)  # fmt: skip


class SweepPoint(BaseModel):
    """One point of a grid sweep: the SGLang steps, topk and draft tokens written for `value`."""

    model_config = ConfigDict(extra="ignore")

    value: int
    steps: int
    topk: int
    draft_tokens: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        return f"steps {self.steps} · topk {self.topk} · draft {self.draft_tokens}"


class SkippedPoint(BaseModel):
    """A grid point that was not swept, and why (SGLang would not run it as written)."""

    steps: int
    topk: int
    draft_tokens: int
    reason: str

    def line(self) -> str:
        return f"steps {self.steps} · topk {self.topk} · draft {self.draft_tokens} skipped: {self.reason}"


class TuneCell(BaseModel):
    """One burst: one value at one concurrency."""

    model_config = ConfigDict(extra="ignore")

    value: int
    concurrency: int
    ok: bool = Field(description="the burst ran (some of its requests may still have failed)")
    requests: int = 0
    errors: int = 0
    decode_tokens_per_s: float | None = Field(None, description="pooled: Σ(tokens-1) / Σ(e2e-TTFT)")
    output_tokens_per_s: float | None = Field(None, description="aggregate: all output / active time")
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    tpot_p50_s: float | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position_acceptance: list[float] | None = None
    acceptance_note: str | None = None
    speedup: float | None = Field(None, description="decode tokens/s over the baseline at this concurrency")
    speedup_ci95: tuple[float, float] | None = None
    throughput_speedup: float | None = None
    failure: str | None = None
    burst_file: str | None = None


class ValueOutcome(BaseModel):
    """One swept value: did the server start with it (and why not), and its cells."""

    model_config = ConfigDict(extra="ignore")

    value: int
    started: bool
    failure: str | None = None
    diff: str = ""
    restart_output: list[str] = Field(default_factory=list)
    cells: list[TuneCell] = Field(default_factory=list)


class ScheduleStep(BaseModel):
    value: int
    up_to_concurrency: int | None = Field(description="None: beyond every measured load")


class AppliedChange(BaseModel):
    value: int
    concurrency: int
    diff: str


class TuneResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: Literal["spectop-tune/1"] = "spectop-tune/1"
    started_at: datetime
    duration_s: float = 0.0
    config_file: str
    kind: str
    key: str
    endpoint: str
    restart_command: list[str]
    values: list[int]
    concurrencies: list[int]
    original_value: int | None
    baseline_value: int
    requests: int
    max_tokens: int | None
    prompts: str
    points: list[SweepPoint] = Field(default_factory=list, description="a grid's points; [] for one key")
    skipped: list[SkippedPoint] = Field(default_factory=list)
    outcomes: list[ValueOutcome] = Field(default_factory=list)
    best: dict[int, int | None] = Field(default_factory=dict, description="concurrency -> best value")
    schedule: list[ScheduleStep] = Field(default_factory=list)
    break_even_concurrency: int | None = Field(
        None, description="lowest measured concurrency where no value beats the baseline (speculation off)"
    )
    applied: AppliedChange | None = None
    restored: bool = False
    final_restart_ok: bool | None = None
    cancelled: bool = False
    notes: list[str] = Field(default_factory=list)

    def cell(self, value: int, concurrency: int) -> TuneCell | None:
        for outcome in self.outcomes:
            if outcome.value == value:
                for cell in outcome.cells:
                    if cell.concurrency == concurrency:
                        return cell
        return None

    def outcome(self, value: int) -> ValueOutcome | None:
        return next((outcome for outcome in self.outcomes if outcome.value == value), None)

    def point(self, value: int) -> SweepPoint | None:
        return next((point for point in self.points if point.value == value), None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def best_points(self) -> dict[int, SweepPoint]:
        """A grid's recommendation with its parts: concurrency -> the best point (speculation off: absent)."""
        points = {c: self.point(value) for c, value in self.best.items() if value is not None}
        return {c: point for c, point in points.items() if point is not None}

    def name(self, value: int) -> str:
        """How a value reads in a sentence: "k=2", or a grid's "steps 3 · topk 1 · draft 4" / "off"."""
        if not self.points:
            return f"k={value}"
        point = self.point(value)
        return point.label if point is not None else "off" if value == 0 else f"point {value}"


# --- figures of one burst ---------------------------------------------------------------------------


def cell_from_arm(value: int, concurrency: int, arm: ArmResult) -> TuneCell:
    summary = arm_summary(arm, with_detail=False)
    ok = [r for r in arm.requests if r.ok]
    ttfts = sorted(r.ttft_s for r in ok if r.ttft_s is not None)
    samples = [sample for r in arm.requests if (sample := r.decode_sample())]
    return TuneCell(
        value=value,
        concurrency=concurrency,
        ok=True,
        requests=summary.requests,
        errors=summary.errors,
        decode_tokens_per_s=pooled_rate(samples),
        output_tokens_per_s=summary.output_tokens_per_s,
        ttft_p50_s=percentile(ttfts, 50),
        ttft_p95_s=percentile(ttfts, 95),
        tpot_p50_s=summary.tpot_s.p50,
        acceptance_rate=summary.acceptance_rate,
        mean_acceptance_length=summary.mean_acceptance_length,
        acceptance_note=summary.acceptance_note,
    )


def with_speedup(cell: TuneCell, baseline: ArmResult | None, arm: ArmResult) -> TuneCell:
    if baseline is None:
        return cell
    compared = comparison(baseline, arm)
    return cell.model_copy(
        update={
            "speedup": compared.decode_tokens_per_s_ratio,
            "speedup_ci95": compared.ci95,
            "throughput_speedup": compared.throughput_ratio,
        }
    )


# --- the analysis -----------------------------------------------------------------------------------


def analyse(result: TuneResult) -> TuneResult:
    """Best value per concurrency (highest pooled decode tokens/s), the schedule, the break-even load."""
    best: dict[int, int | None] = {}
    for concurrency in result.concurrencies:
        measured = [
            (cell.decode_tokens_per_s, outcome.value)
            for outcome in result.outcomes
            if (cell := next((c for c in outcome.cells if c.concurrency == concurrency), None))
            and cell.decode_tokens_per_s is not None
        ]
        best[concurrency] = max(measured)[1] if measured else None
    schedule: list[ScheduleStep] = []
    ordered = sorted(c for c in result.concurrencies if best.get(c) is not None)
    for index, concurrency in enumerate(ordered):
        value = best[concurrency]
        assert value is not None
        last = index == len(ordered) - 1
        if schedule and schedule[-1].value == value:
            schedule[-1] = ScheduleStep(value=value, up_to_concurrency=None if last else concurrency)
        else:
            schedule.append(ScheduleStep(value=value, up_to_concurrency=None if last else concurrency))
    break_even = None
    if result.baseline_value == 0:
        for concurrency in ordered:
            if best[concurrency] == 0:
                break_even = concurrency
                break
    return result.model_copy(
        update={"best": best, "schedule": schedule, "break_even_concurrency": break_even}
    )


# --- rendering --------------------------------------------------------------------------------------


def _speedup(cell: TuneCell) -> str:
    if cell.speedup is None:
        return DASH
    text = fmt_times(cell.speedup)
    if cell.speedup_ci95 is not None:
        text += f" ({fmt_times_interval(cell.speedup_ci95)})"
    return text


def _positions(values: list[float] | None) -> str:
    return DASH if not values else " ".join(fmt_rate(p) for p in values)


def value_label(result: TuneResult, value: int) -> str:
    tags = []
    if value == result.baseline_value:
        tags.append("base")
    if value == result.original_value:
        tags.append("file")
    text = result.name(value) if result.points else f"{value}"
    return text + (f" ({', '.join(tags)})" if tags else "")


def _label_width(result: TuneResult) -> int:
    return max([12] + [len(value_label(result, outcome.value)) + 2 for outcome in result.outcomes])


def schedule_text(result: TuneResult) -> str:
    if not result.schedule:
        return "no schedule: no value was measured"
    if len(result.schedule) == 1:
        return f"{result.name(result.schedule[0].value)} at every measured concurrency"
    parts = []
    for step in result.schedule:
        limit = "beyond" if step.up_to_concurrency is None else f"up to {step.up_to_concurrency}"
        parts.append(f"{result.name(step.value)} {limit}")
    return ", ".join(parts)


def break_even_text(result: TuneResult) -> str:
    if result.baseline_value != 0:
        return "break-even: unknown (the baseline is not speculation off: sweep value 0 for it)"
    if result.break_even_concurrency is None:
        return "break-even: speculation pays at every measured concurrency"
    paying = [c for c in sorted(result.concurrencies) if c < result.break_even_concurrency]
    below = f" (it still pays at {paying[-1]})" if paying and result.best.get(paying[-1]) else ""
    return f"break-even: speculation stops paying at concurrency {result.break_even_concurrency}{below}"


def summary_lines(result: TuneResult) -> list[str]:
    lines = []
    for concurrency in result.concurrencies:
        value = result.best.get(concurrency)
        if value is None:
            lines.append(f"best at concurrency {concurrency}: {DASH} (nothing measured)")
            continue
        cell = result.cell(value, concurrency)
        speed = ""
        if cell and cell.speedup and value != result.baseline_value:
            speed = f", {_speedup(cell)} over {result.name(result.baseline_value)}"
        elif value == result.baseline_value:
            speed = " (the baseline)"
        lines.append(f"best at concurrency {concurrency}: {result.name(value)}{speed}")
    lines.append("schedule: " + schedule_text(result))
    lines.append(break_even_text(result))
    for outcome in result.outcomes:
        if not outcome.started:
            lines.append(f"{result.name(outcome.value)} failed: {outcome.failure or 'no reason known'}")
    lines += [skipped.line() for skipped in result.skipped]
    return lines


def render_text(result: TuneResult) -> str:
    """Decode tokens/s and speedup per value × concurrency, acceptance per value, the verdict."""
    width, label = 24, _label_width(result)
    lines = [f"spectop tune {result.config_file}: {result.key} on {result.endpoint}", ""]
    columns = "".join(f"{f'c={c} tok/s, speedup':>{width}}" for c in result.concurrencies)
    header = f"{'value':{label}}" + columns
    lines.append(header)
    for outcome in result.outcomes:
        row = f"{value_label(result, outcome.value):{label}}"
        for concurrency in result.concurrencies:
            cell = result.cell(outcome.value, concurrency)
            if not outcome.started:
                text = "failed to start"
            elif cell is None or not cell.ok:
                text = "failed" if cell else DASH
            else:
                text = f"{fmt_tokens_per_s(cell.decode_tokens_per_s)} {_speedup(cell)}"
            row += f"{text:>{width}}"
        lines.append(row)
    lines += [
        "",
        f"{'value':{label}}{'c':>5}{'accept':>8}{'length':>8}{'TTFT p50':>10}{'p95':>8}  per position %",
    ]
    for outcome in result.outcomes:
        for cell in outcome.cells:
            lines.append(
                f"{value_label(result, outcome.value):{label}}{cell.concurrency:>5}"
                f"{fmt_rate(cell.acceptance_rate):>8}{fmt_length(cell.mean_acceptance_length):>8}"
                f"{fmt_latency(cell.ttft_p50_s):>10}{fmt_latency(cell.ttft_p95_s):>8}"
                f"  {_positions(cell.per_position_acceptance)}"
            )
    lines += ["", *summary_lines(result), *result.notes]
    return "\n".join(safe_line(line) for line in lines)


def render_markdown(result: TuneResult) -> str:
    lines = ["# spectop tune", "", f"`{result.key}` in `{result.config_file}` on {result.endpoint}, "
             f"started {result.started_at.isoformat()}", ""]  # fmt: skip
    lines.append("| value | " + " | ".join(f"c={c} decode tok/s" for c in result.concurrencies) + " |")
    lines.append("| --- |" + " --- |" * len(result.concurrencies))
    for outcome in result.outcomes:
        cells = []
        for concurrency in result.concurrencies:
            cell = result.cell(outcome.value, concurrency)
            if not outcome.started:
                cells.append("failed to start")
            else:
                rate = None if cell is None else fmt_tokens_per_s(cell.decode_tokens_per_s)
                cells.append(DASH if cell is None else f"{rate} ({_speedup(cell)})")
        lines.append(f"| {value_label(result, outcome.value)} | " + " | ".join(cells) + " |")
    lines += ["", "| value | c | acceptance | mean length | TTFT p50 | TTFT p95 | per position % |"]
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for outcome in result.outcomes:
        for cell in outcome.cells:
            lines.append(
                f"| {result.name(outcome.value) if result.points else outcome.value} | {cell.concurrency} | "
                f"{fmt_rate(cell.acceptance_rate)} | "
                f"{fmt_length(cell.mean_acceptance_length)} | {fmt_latency(cell.ttft_p50_s)} | "
                f"{fmt_latency(cell.ttft_p95_s)} | "
                f"{_positions(cell.per_position_acceptance)} |"
            )
    lines += [""] + [f"- {line}" for line in summary_lines(result) + list(result.notes)]
    return "\n".join(safe_line(line) for line in lines) + "\n"


def render_csv(result: TuneResult) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS)
    writer.writeheader()
    for outcome in result.outcomes:
        cells = outcome.cells or [
            TuneCell(value=outcome.value, concurrency=c, ok=False) for c in result.concurrencies
        ]
        point = result.point(outcome.value)
        for cell in cells:
            ci = cell.speedup_ci95
            parts = {
                "label": result.name(outcome.value) if result.points else "",
                "steps": "" if point is None else point.steps,
                "topk": "" if point is None else point.topk,
                "draft_tokens": "" if point is None else point.draft_tokens,
            }
            writer.writerow(
                {
                    "value": cell.value, "concurrency": cell.concurrency, "ok": cell.ok and outcome.started,
                    "requests": cell.requests, "errors": cell.errors,
                    "decode_tokens_per_s": _blank(cell.decode_tokens_per_s),
                    "output_tokens_per_s": _blank(cell.output_tokens_per_s),
                    "ttft_p50_s": _blank(cell.ttft_p50_s), "ttft_p95_s": _blank(cell.ttft_p95_s),
                    "tpot_p50_s": _blank(cell.tpot_p50_s), "acceptance_rate": _blank(cell.acceptance_rate),
                    "mean_acceptance_length": _blank(cell.mean_acceptance_length),
                    "per_position_acceptance": _positions_csv(cell.per_position_acceptance),
                    "speedup": _blank(cell.speedup), "speedup_ci_low": "" if ci is None else ci[0],
                    "speedup_ci_high": "" if ci is None else ci[1],
                    "best": result.best.get(cell.concurrency) == cell.value,
                    "failure": safe_line(cell.failure or outcome.failure or ""),
                    "burst_file": cell.burst_file or "",
                    **parts,
                }
            )  # fmt: skip
    return out.getvalue()


def _positions_csv(values: list[float] | None) -> str:
    return " ".join(f"{p:.4f}" for p in values or [])


def _blank(value: object) -> object:
    return "" if value is None else value


def render_json(result: TuneResult) -> str:
    return json_safe(json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=1))


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    return path


def export(result: TuneResult, kind: str, path: Path) -> Path:
    renderers = {"json": render_json, "csv": render_csv, "markdown": render_markdown}
    if kind not in renderers:
        raise ValueError(f"unknown export kind {kind!r}")
    return _write(path, renderers[kind](result))


def tune_file_name(result: TuneResult) -> str:
    return f"tune-{result.started_at:%Y%m%d-%H%M%S-%f}.json"


def save_tune(result: TuneResult, folder: Path | None = None) -> Path:
    """Kept beside the bursts (`$XDG_DATA_HOME/spectop/bursts/tune-*.json`); its cells name their bursts."""
    folder = folder or bursts_dir()
    return _write(folder / tune_file_name(result), result.model_dump_json())


def load_tune(path: Path) -> TuneResult:
    return TuneResult.model_validate_json(path.read_bytes())


def list_tunes(folder: Path | None = None) -> list[Path]:
    folder = folder or bursts_dir()
    return sorted(folder.glob("tune-*.json"), reverse=True) if os.path.isdir(folder) else []
