"""Context as an axis of a burst: prompts sized by the server's own tokenizer (`POST /tokenize`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import httpx

from tui.bench.prompts import (
    PromptSet,
    counted_line,
    filler_sample,
    load_prompt_set,
    sized_prompt_set,
    sized_spec,
)
from tui.bench.report.models import BurstSummary
from tui.bench.request import server_root
from tui.bench.results import ArmResult
from tui.bench.transport import client_or_own
from tui.format import UNKNOWN, fmt_times, fmt_times_interval, fmt_tokens, fmt_tokens_per_s
from tui.tables import Table


def counted_prompt_tokens(arm: ArmResult) -> list[int]:
    return [r.prompt_tokens for r in arm.requests if r.ok and r.prompt_tokens is not None]


def length_check(tokens: int, arms: list[ArmResult]) -> str:
    """One line per arm: the length asked against what the server counted."""
    return "\n".join(
        f"{arm.label.upper()}: {counted_line(tokens, counted_prompt_tokens(arm))}" for arm in arms
    )


def context_table(rows: list[tuple[int, list[ArmResult], BurstSummary]]) -> list[str]:
    """Per prompt length: what each arm's server counted (median), A's and B's decode tokens/s and B/A."""
    columns = ["prompt tokens", "counted", "A decode tok/s", "B decode tok/s", "B/A (95% CI)"]
    table = []
    for tokens, arms, summary in rows:
        counted = sorted(n for arm in arms for n in counted_prompt_tokens(arm))
        middle = fmt_tokens(counted[len(counted) // 2]) if counted else UNKNOWN
        ratio = UNKNOWN  # one arm
        if (comparison := summary.comparison) is not None:
            ratio = (
                f"{fmt_times(comparison.decode_tokens_per_s_ratio)} ({fmt_times_interval(comparison.ci95)})"
            )
        rates = [
            fmt_tokens_per_s(arm.decode_tokens_per_s.pooled if arm else None)
            for arm in (summary.a, summary.b)
        ]
        table.append([fmt_tokens(tokens), middle, *rates, ratio])
    return ["by context length", *Table(columns, table).text(gap="  ")]


async def server_token_counts(
    client: httpx.AsyncClient, url: str, texts: Iterable[str]
) -> dict[str, int] | None:
    """Each text's token count by the server's tokenizer; None when it has no such endpoint."""
    counts: dict[str, int] = {}
    for text in texts:
        try:
            response = await client.post(url, json={"content": text, "prompt": text}, timeout=10.0)
            data = response.json() if response.is_success else None
        except (httpx.HTTPError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        count, tokens = data.get("count"), data.get("tokens")
        if isinstance(count, int):
            counts[text] = count
        elif isinstance(tokens, list):
            counts[text] = len(tokens)
        else:
            return None
    return counts


async def sized_for_server(
    spec: str, base_url: str | None, client: httpx.AsyncClient | None = None
) -> PromptSet:
    """The prompt set of `spec`; `SET@N` sized by the server's tokenizer at `base_url` when it has one."""
    sized = sized_spec(spec)
    if sized is None or base_url is None:
        return await asyncio.to_thread(load_prompt_set, spec)
    base = await asyncio.to_thread(load_prompt_set, sized[0])
    texts = {content for prompt in base.prompts for _role, content in prompt.messages} | {filler_sample()}
    url = server_root(base_url) + "/tokenize"
    async with client_or_own(client) as own:
        counts = await server_token_counts(own, url, texts)
    if counts is None:
        return sized_prompt_set(base, sized[1])
    return sized_prompt_set(base, sized[1], counts.__getitem__, counted_by=f"the server's tokenizer ({url})")
