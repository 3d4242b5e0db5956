"""`spectop snapshot --prometheus URL [--match SELECTOR] --window S [--json]`: one row per instance.

Prometheus already holds the window, so nothing is waited for: the figures are PromQL over the
last S seconds (S should span at least two of Prometheus' scrapes, else the rates are unknown).
With --json each line has the same fields as a direct snapshot's, `url` being the instance.
Exit 0 when every instance was up, 1 when one was not or Prometheus failed, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from tui.advice.advisor import Advice
from tui.fleet.options import prometheus_settings
from tui.fleet.poller import FleetPoller, FleetReading
from tui.format import UNKNOWN, figure_text, fmt_setting
from tui.sanitize import json_safe, safe_line
from tui.settings import SettingsError, find_settings_file, parse_settings
from tui.telemetry.figures import Figures
from tui.telemetry.plausible_figures import dropped_words
from tui.telemetry.snapshot_record import snapshot_record


def row(
    reading: FleetReading, advice: Advice | None = None, group_advice: Advice | None = None
) -> dict[str, Any]:
    """A direct snapshot's JSON line (the same record type, so the same fields), url = the instance;
    `advice` the instance's, `group` and `group_advice` its group's (tui/advice/fleet.py)."""
    record = snapshot_record(
        url=reading.instance,
        backend=reading.backend,
        up=reading.up,
        model=reading.model,
        window_s=reading.window_s,
        figures=_shown(reading),
        error=reading.error,
    )
    record["advice"] = None if advice is None else advice.as_json()
    record["group"] = reading.group
    record["group_advice"] = None if group_advice is None else group_advice.as_json()
    record["impossible_figures"] = reading.impossible_figures  # dropped so far (each one's note says why)
    return record


def _shown(reading: FleetReading) -> Figures:
    """Like a direct snapshot: a down instance has no figures (not the window's last ones)."""
    return reading.figures if reading.up else Figures()


_COLUMNS = ("instance", "status", "backend", "tok/s", "accept", "len", "TTFT p95", "run/wait", "KV", "model")
_FIGURES = ("generation_tokens_per_s", "acceptance_rate", "mean_acceptance_length", "ttft_p95_s")
_LEFT = {0, 1, 2, 9}  # text columns; figures are right-aligned


def table(readings: list[FleetReading]) -> list[str]:
    rows = []
    for reading in readings:
        f = _shown(reading)
        rows.append(
            (  # labels are Prometheus's (the targets'): untrusted text
                safe_line(reading.instance),
                "up" if reading.up else "DOWN",
                safe_line(reading.backend or "?"),
                *(figure_text(f, key) for key in _FIGURES),
                f"{figure_text(f, 'running')}/{figure_text(f, 'waiting')}",
                figure_text(f, "kv_cache_usage"),
                safe_line(reading.model or UNKNOWN),
            )
        )
    columns = _COLUMNS
    widths = [max(len(line[i]) for line in (columns, *rows)) for i in range(len(columns))]
    lines = []
    for line in (columns, *rows):
        cells = [
            cell.ljust(width) if i in _LEFT else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    for reading in readings:
        if reading.error:
            lines.append(safe_line(f"{reading.instance}: {reading.error}"))
        if reading.impossible_figures:
            lines.append(safe_line(f"{reading.instance}: {dropped_words(reading.impossible_figures)}"))
    return lines


def advice_lines(groups: dict[str, Advice], advices: dict[str, Advice | None]) -> list[str]:
    """The advisor's line per group, then per instance that has a step-cost model."""
    from tui.advice.fleet import group_line

    lines = [group_line(group, advice) for group, advice in groups.items()]
    for instance, advice in advices.items():
        if advice is not None and advice.basis is not None:
            lines.append(safe_line(f"advice · {instance}: {advice.line()}"))
    return lines


async def _refresh(poller: FleetPoller) -> Any:
    async with poller:
        return await poller.refresh()


def run_fleet(args: argparse.Namespace) -> int:
    if args.urls:
        print("spectop snapshot: give URLs or --prometheus URL, not both", file=sys.stderr)
        return 2
    try:
        path = find_settings_file(getattr(args, "config", None))
        base = parse_settings(path.read_text(encoding="utf-8"), path).prometheus if path else None
        settings = prometheus_settings(base, args.prometheus, args.match)
    except (SettingsError, OSError) as error:
        print(f"spectop snapshot: {error}", file=sys.stderr)
        return 2
    assert settings is not None
    settings = settings.model_copy(update={"timeout_s": args.timeout})
    from tui.auth import ApiKeyError

    try:
        poller = FleetPoller(settings, args.window)
    except ApiKeyError as error:
        print(f"spectop snapshot: {error}", file=sys.stderr)
        return 2
    for name in poller.client.missing_secrets():
        print(f"spectop snapshot: environment variable {name} is not set; asking without it", file=sys.stderr)
    refresh = asyncio.run(_refresh(poller))
    if refresh.error is not None:
        print(safe_line(f"spectop snapshot: {settings.url}: {refresh.error}"), file=sys.stderr)
        return 1
    if not refresh.readings:
        where = f" matching {{{settings.match}}}" if settings.match else ""
        print(
            f"spectop snapshot: {settings.url}: no vLLM, SGLang or llama.cpp instance{where} in Prometheus",
            file=sys.stderr,
        )
        return 1
    if not any(reading.figures.generation_tokens_per_s is not None for reading in refresh.readings):
        print(
            f"spectop snapshot: no rate over the last {fmt_setting(args.window)} s; "
            "the window must span at least two of Prometheus' scrapes",
            file=sys.stderr,
        )
    from tui.advice.fleet import group_advices, instance_advice
    from tui.advice.live import read_models

    kept = read_models()
    groups = group_advices(refresh.readings, kept)
    advices = {reading.instance: instance_advice(reading, kept) for reading in refresh.readings}
    if args.json:
        for reading in refresh.readings:
            line = row(reading, advices[reading.instance], groups.get(reading.group or ""))
            print(json_safe(json.dumps(line, ensure_ascii=False)))
    else:
        print(f"{settings.url} · {len(refresh.readings)} instances · {fmt_setting(args.window)} s window")
        print("\n".join(table(refresh.readings)))
        print("\n".join(advice_lines(groups, advices)))
    return 0 if all(reading.up for reading in refresh.readings) else 1
