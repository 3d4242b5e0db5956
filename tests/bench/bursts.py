"""What the burst tests share: a burst's config, and a verdict's words after the client's warning."""

from __future__ import annotations

import re
from typing import Any

from tui.bench.engine import ArmTarget, BurstConfig
from tui.bench.prompts import PromptSet, load_prompt_set

_CLIENT_FELL_BEHIND = re.compile(r"^UNRELIABLE \(the measuring client fell behind[^)]*\): ")


def verdict_body(verdict: str) -> str:
    return _CLIENT_FELL_BEHIND.sub("", verdict, count=1)


def burst_config(
    a: str | ArmTarget, b: str | ArmTarget | None = None, prompts: str | PromptSet = "mixed", **settings: Any
) -> BurstConfig:
    """A burst of `prompts` on arm A (and B); an arm given by URL serves model "m" and is not scraped."""

    def arm(name: str, target: str | ArmTarget) -> ArmTarget:
        return ArmTarget(name, target, model="m", scrape_metrics=False) if isinstance(target, str) else target

    prompt_set = load_prompt_set(prompts) if isinstance(prompts, str) else prompts
    return BurstConfig(a=arm("A", a), b=None if b is None else arm("B", b), prompt_set=prompt_set, **settings)
