"""The advisor's word on context: where a kept tune with a context axis (`spectop tune --prompt-tokens`)
found speculation stops paying, significantly, and the live window's prompts are that long at about that
load, the advice is "at this context, k=0". The window's prompt length is the mean of the engine's
prompt-length histogram (vLLM `request_prompt_tokens`, SGLang `prompt_tokens_histogram`); llama.cpp has
none, so there the context is unknown and nothing is said."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tui.advice.stepcost import endpoint_key
from tui.format import fmt_tokens


@dataclass(frozen=True)
class ContextFinding:
    """From a kept tune: at `concurrency`, speculation off wins from `prompt_tokens` on (significantly)."""

    endpoint: str  # host:port
    concurrency: int
    prompt_tokens: int
    pays_up_to: int | None
    tuned_at: datetime


def read_context_findings(folder: Path | None = None) -> tuple[ContextFinding, ...]:
    """Every kept tune's significant context stops, newest tune first (a tune that does not read is
    skipped: the burst history lists it with its problem)."""
    # lazy: the tune's and the bursts' report modules are 35 ms of imports, +9% on the first frame
    from tui.bench.burst_store import BurstFileError
    from tui.tune.result import list_tunes, load_tune

    found = []
    for path in list_tunes(folder):
        try:
            result = load_tune(path)
        except BurstFileError:
            continue
        found += [
            ContextFinding(
                endpoint_key(result.endpoint),
                stop.concurrency,
                stop.prompt_tokens,
                stop.pays_up_to,
                result.started_at,
            )
            for stop in result.context_stops
            if stop.significant and stop.prompt_tokens is not None
        ]
    return tuple(found)


def context_words(
    findings: tuple[ContextFinding, ...], url: str, prompt_tokens: float | None, running: float | None
) -> str | None:
    """ "at this context (18,432 prompt tokens), k=0: speculation stops paying from 16,384 at c=1 (tune
    2026-12-05)" when the window's prompts reach the newest tune's stop; else None."""
    key = endpoint_key(url)
    mine = [finding for finding in findings if finding.endpoint == key]
    if prompt_tokens is None or not mine:
        return None
    newest = max(finding.tuned_at for finding in mine)
    load = max(1.0, running or 0.0)
    finding = min(
        (f for f in mine if f.tuned_at == newest), key=lambda f: (abs(f.concurrency - load), f.concurrency)
    )
    if prompt_tokens < finding.prompt_tokens:
        return None
    return (
        f"at this context ({fmt_tokens(prompt_tokens)} prompt tokens), k=0: speculation stops paying from "
        f"{fmt_tokens(finding.prompt_tokens)} at c={finding.concurrency} (tune {finding.tuned_at:%Y-%m-%d})"
    )
