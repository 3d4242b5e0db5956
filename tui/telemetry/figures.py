"""The derived figures of one endpoint over a window (names are part of the JSON output: keep them). Unknown
is None (never 0), with why in `notes`; `lifetime`: the first reading's figures since the server started."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

# Figures a single scrape gives over the server's lifetime (ratios of counters that start at 0, and
# quantiles of histograms that do).
LIFETIME_FIGURES: tuple[str, ...] = (
    "acceptance_rate",
    "mean_acceptance_length",
    "per_position_acceptance",
    "prefix_cache_hit_rate",
    "ttft_mean_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "tpot_mean_s",
    "e2e_mean_s",
)


class Figures(BaseModel):
    generation_tokens_per_s: float | None = None
    prompt_tokens_per_s: float | None = Field(None, description="prompt tokens incl. those served from cache")
    requests_per_s: float | None = None
    acceptance_rate: float | None = Field(None, description="0..1, accepted / drafted tokens")
    mean_acceptance_length: float | None = Field(None, description="tokens per verify step, incl. bonus")
    per_position_acceptance: list[float] | None = Field(None, description="position 0 first")
    ttft_mean_s: float | None = None
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    tpot_mean_s: float | None = Field(None, description="true per-output-token latency")
    e2e_mean_s: float | None = None
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = Field(None, description="0..1")
    prefix_cache_hit_rate: float | None = Field(None, description="0..1")
    # --- the draft length in effect (variable k: vLLM's per-batch-size table, SGLang's adaptive steps) ---
    k_in_effect: float | None = None  # draft tokens per verify step over the window (a mean when k varied)
    k_in_effect_derived: bool = False  # worked out from counters, not reported by the server as such
    k_configured: int | None = Field(None, description="the largest k the server drafts (its configured k)")
    per_position_mixed: bool = False  # steps drafted different lengths: a per-position view would mix them
    prompt_tokens_mean: float | None = None  # mean prompt length of the window's finished requests (advisor)
    # --- why: reasons and qualifiers (all optional, so older recordings still load) ---
    notes: dict[str, str] = Field(default_factory=dict)  # figure (or "window") -> why None, partial, a bound
    covered_s: float | None = Field(None, description="seconds of the window the figures cover")
    window_short: bool = Field(False, description="the figures cover less than half the configured window")
    restarted_in_window: bool = False
    restarted_s_ago: float | None = None  # before the newest scrape; None: the new process' start unknown
    restart_seen_s_ago: float | None = None  # before the newest scrape, of the new process' first reading
    # quantile figure -> (lower, upper) bound of its bucket when the interpolated value says little (the first
    # bucket, one wider than the value, or +Inf: upper None)
    quantile_bounds: dict[str, tuple[float, float | None]] = Field(default_factory=dict)
    lifetime: Figures | None = None  # first reading only (no window yet): LIFETIME_FIGURES since the start


# The figures themselves, in JSON order: the fields before the draft length and the explanations.
FIGURE_NAMES: tuple[str, ...] = tuple(Figures.model_fields)[: list(Figures.model_fields).index("k_in_effect")]
# Why the figures are what they are: after the figures and before the error in a `snapshot --json` line.
EXPLANATION_FIELDS = ("notes", "covered_s", "restarted_in_window", "restarted_s_ago", "quantile_bounds")


def snapshot_record(
    *,
    url: str,
    backend: str | None,
    up: bool,
    model: str | None,
    window_s: float | None,
    figures: Figures | None,
    error: str | None,
) -> dict[str, Any]:
    """One `spectop snapshot --json` line: the same fields for a scraped endpoint and a fleet instance."""
    dumped = (figures or Figures()).model_dump()
    shown = {name: dumped[name] for name in (*FIGURE_NAMES, *EXPLANATION_FIELDS)}
    return {
        "url": url,
        "backend": backend,
        "up": up,
        "model": model,
        "window_s": window_s,
        **shown,
        "error": error,
    }
