"""The what-if advisor in fleet mode: per instance from its PromQL per-position rates, and per group from
its members' rates pooled by draft steps (members that run different k have no common advice)."""

from __future__ import annotations

from collections.abc import Iterable

from tui.advice.advisor import Advice
from tui.advice.live import KeptModels, advice_for
from tui.advice.stepcost import find_model
from tui.fleet.poller import FleetReading
from tui.format import fmt_count
from tui.sanitize import safe_line
from tui.telemetry.figures import Figures

MAX_GROUP_LINES = 3  # the dashboard's group advice: more would take the table's rows


def instance_advice(reading: FleetReading, kept: KeptModels) -> Advice | None:
    if not reading.up:
        return None
    return advice_for(reading.figures, reading.instance, reading.model, kept)


def pooled_positions(members: Iterable[Figures]) -> tuple[list[float] | None, str | None]:
    """The members' per-position acceptance pooled by their draft steps/s; or why there is none."""
    weighted: list[tuple[list[float], float]] = []
    for figures in members:
        rates = figures.per_position_acceptance
        tokens, length = figures.generation_tokens_per_s, figures.mean_acceptance_length
        if rates and tokens and length:
            weighted.append((rates, tokens / length))
    if not weighted:
        return None, "no member has per-position acceptance in the window"
    if len({len(rates) for rates, _ in weighted}) > 1:
        return None, "the members run different k"
    total = sum(weight for _, weight in weighted)
    if total <= 0:
        return None, "no drafts in the window"
    size = len(weighted[0][0])
    return [sum(rates[i] * weight for rates, weight in weighted) / total for i in range(size)], None


def pooled_figures(members: list[Figures]) -> tuple[Figures, str | None]:
    """The members' figures for the advisor: `pooled_positions` and the mean running requests."""
    positions, problem = pooled_positions(members)
    running = [figures.running for figures in members if figures.running is not None]
    load = sum(running) / len(running) if running else None
    return Figures(per_position_acceptance=positions, running=load), problem


def calibrated_first(servers: list[tuple[str, str | None]], kept: KeptModels) -> tuple[str, str | None]:
    """The first (url, model name) with a kept step-cost model, else the first."""
    return next((s for s in servers if find_model(kept.models, s[0], s[1], None)[0] is not None), servers[0])


def group_advice(members: list[FleetReading], kept: KeptModels) -> Advice:
    """One group's advice from its up members."""
    live = [reading for reading in members if reading.up]
    figures, problem = pooled_figures([reading.figures for reading in live])
    if figures.per_position_acceptance is None:
        return Advice(None, note=problem or "no member is up")
    url, model = calibrated_first([(reading.instance, reading.model) for reading in live], kept)
    return advice_for(figures, url, model, kept)


def group_advices(readings: Iterable[FleetReading], kept: KeptModels) -> dict[str, Advice]:
    """Group name ("" without the label) -> its advice."""
    groups: dict[str, list[FleetReading]] = {}
    for reading in readings:
        groups.setdefault(reading.group or "", []).append(reading)
    return {group: group_advice(members, kept) for group, members in sorted(groups.items())}


def group_line(group: str, advice: Advice) -> str:
    """ "advice · group llama-8b: k=4 now · k=2 would be 1.12x" (the group's name made safe)."""
    return safe_line(f"advice · group {group or '(no label)'}: {advice.line()}")


def group_lines(groups: dict[str, Advice], limit: int = MAX_GROUP_LINES) -> list[tuple[str, bool]]:
    """The dashboard's group advice: (line, advises another k) for each group with a step-cost model,
    those that advise another k first; beyond `limit`, one line says how many more there are."""
    calibrated = [(group, advice) for group, advice in groups.items() if advice.basis is not None]
    calibrated.sort(key=lambda item: item[1].better_k is None)  # stable: by name within each kind
    lines = [(group_line(group, advice), advice.better_k is not None) for group, advice in calibrated]
    if len(lines) <= limit:
        return lines
    hidden = lines[limit - 1 :]
    better = sum(flag for _, flag in hidden)
    more = f"advice · {fmt_count(len(hidden))} more groups"
    if better:
        more += f", {fmt_count(better)} advising another k"
    return [*lines[: limit - 1], (f"{more} (spectop snapshot --prometheus URL)", bool(better))]


def advice_lines(groups: dict[str, Advice], advices: dict[str, Advice | None]) -> list[str]:
    """The advisor's line per group, then per instance that has a step-cost model."""
    lines = [group_line(group, advice) for group, advice in groups.items()]
    for instance, advice in advices.items():
        if advice is not None and advice.basis is not None:
            lines.append(safe_line(f"advice · {instance}: {advice.line()}"))
    return lines
