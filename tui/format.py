"""One figure vocabulary: how every figure reads, on every screen and in every text export.
One function per kind of figure, one rule each. A figure that cannot be known reads "–" (`UNKNOWN`),
never 0; `FIGURES` maps each figure of `Figures` to its label and formatter. Pure functions, no textual."""

from __future__ import annotations

import functools
import math
import time as time_module
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from tui.telemetry.figures import Figures

UNKNOWN = "–"
MIXED = "mixed"  # per-position acceptance over drafts of different lengths (variable k)
# Where the figures would be when spectop failed to derive them (a bug; the traceback is in the debug log).
FIGURES_FAILED = "figures failed: see the debug log"
BAR_CHARS = " ▁▂▃▄▅▆▇█"
QUANTILES = ("ttft_p50_s", "ttft_p95_s")
# After a figure over the server's lifetime (since it started), shown until the window has two scrapes.
LIFETIME_MARK = "*"
LIFETIME_LEGEND = f'"{LIFETIME_MARK}": since the server started (lifetime), until the window has two scrapes.'
LIFETIME_CAVEAT = f"{LIFETIME_MARK} since the server started · rates from the next scrape"


def known(value: float | None) -> TypeGuard[float]:
    """A finite number (None, NaN and infinities are unknown); narrows `value` to float when true."""
    return value is not None and math.isfinite(value)


def _figure(format_known: Callable[[float], str]) -> Callable[[float | None], str]:
    """A formatter of known numbers as one that reads `UNKNOWN` for None, NaN and infinities."""

    @functools.wraps(format_known)
    def format_figure(value: float | None) -> str:
        return format_known(value) if value is not None and math.isfinite(value) else UNKNOWN

    return format_figure


@_figure
def fmt_rate(value: float) -> str:
    """A 0..1 rate or fraction as whole percent: "71%"; "<1%" when above 0 but below half a percent."""
    percent = value * 100
    return "<1%" if 0 < percent < 0.5 else f"{percent:.0f}%"


@_figure
def fmt_length(value: float) -> str:
    """A length in tokens (mean acceptance length, tokens per chunk): "2.40"."""
    return f"{value:.2f}"


_MS_DIGITS = ((2, 1.0), (1, 10.0), (0, 1000.0))  # "0.85 ms", "6.5 ms", "51 ms", below a second
_S_DIGITS = ((2, 10.0), (1, 100.0), (0, math.inf))  # "1.20 s", "12.5 s", "120 s"


@_figure
def fmt_latency(value: float) -> str:
    """Seconds: "0.85 ms", "6.5 ms", "51 ms" below a second, then "1.20 s", "12.5 s", "120 s"."""
    # The digits follow the figure as it reads once rounded: 0.00996 s is "10 ms", not "10.0 ms", and
    # 0.9996 s is "1.00 s", not "1000 ms" (the rounding carries into the next unit).
    sign = "-" if value < 0 else ""
    size = abs(value)
    for scale, unit, steps in ((1000.0, "ms", _MS_DIGITS), (1.0, "s", _S_DIGITS)):
        for digits, below in steps:
            text = f"{size * scale:.{digits}f}"
            if float(text) < below:
                return f"{sign}{text} {unit}"
    return f"{sign}{size:.0f} s"


@_figure
def fmt_latency_delta(value: float) -> str:
    """A signed latency difference: "+12 ms", "-1.20 s"."""
    text = fmt_latency(value)
    return text if text.startswith("-") else f"+{text}"


@_figure
def fmt_times(value: float) -> str:
    """A ratio of two figures (B against A, a speedup) with two decimals: "1.80x"."""
    return f"{value:.2f}x"


def fmt_times_interval(interval: tuple[float, float] | None) -> str:
    """A confidence interval of a ratio, in the ratio's words without the "x": "1.70-1.90"."""
    if interval is None or not (known(interval[0]) and known(interval[1])):
        return UNKNOWN
    return f"{interval[0]:.2f}-{interval[1]:.2f}"


@_figure
def fmt_level(value: float) -> str:
    """A confidence level (0..1) with up to three significant digits: "95%", "99.2%"."""
    return f"{value * 100:.3g}%"


@_figure
def fmt_rate_delta(value: float) -> str:
    """A signed difference of rates or a relative deviation, whole percent: "+25%", "-40%"."""
    text = fmt_rate(value)
    return text if text.startswith("-") else f"+{text}"


def fmt_part_of_window(covered_s: float, window_s: float) -> str:
    """Seconds a short window covers of its length, compact for a table cell: "8/60 s"."""
    return f"{covered_s:.0f}/{window_s:.0f} s"


@_figure
def fmt_gib_number(value: float) -> str:
    """Bytes of memory as GiB without the unit, for "12.3 / 79.6 GiB": "12.3"."""
    return f"{value / 2**30:.1f}"


@_figure
def fmt_whole(value: float) -> str:
    """A whole reading of a device (watts, °C, MHz, a percent of 100), rounded: "350"."""
    return f"{value:.0f}"


def fmt_fraction_setting(value: float) -> str:
    """A fraction to type into a config (gpu_memory_utilization, mem_fraction_static): "0.80"."""
    return f"{value:.2f}"


def fmt_setting(value: float) -> str:
    """A configured number (a timeout, a window, a poll interval, a speed) as one would type it: "0.3",
    "5", "2.5" (no trailing zeros). Not for measured figures: those have their own words above."""
    return f"{value:g}"


@_figure
def fmt_gib(value: float) -> str:
    """Bytes of memory in GiB with one decimal: "79.6 GiB"."""
    return f"{value / 2**30:.1f} GiB"


def fmt_eta(seconds: float | None) -> str:
    """Time left as a countdown: "ETA 3:05"; "ETA –" when it cannot be known yet."""
    if not known(seconds):
        return f"ETA {UNKNOWN}"
    minutes, secs = divmod(int(max(0.0, seconds) + 0.5), 60)
    return f"ETA {minutes}:{secs:02d}"


def fmt_bound(seconds: float) -> str:
    """A histogram bucket edge, exact as configured: "100 ms", "2.5 s", "10 s"."""
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def fmt_quantile(value: float | None, bounds: tuple[float, float | None] | None = None) -> str:
    """A histogram quantile, or the bound it really is: "< 100 ms" in the first bucket, "> 10 s" in the
    +Inf bucket, "~850 ms" inside a bucket wider than the value (see `Figures.quantile_bounds`)."""
    if not known(value) or bounds is None:
        return fmt_latency(value)
    lower, upper = bounds
    if upper is None or math.isinf(upper):
        return f"> {fmt_bound(lower)}"
    return f"< {fmt_bound(upper)}" if lower == 0 else f"~{fmt_latency(value)}"


@_figure
def fmt_tokens_per_s(value: float) -> str:
    """Tokens per second: "45.3", "812.4", then thousands with three significant digits: "2.33k", "12.3k"."""
    size = abs(value)
    if size < 1000:
        return f"{value:.1f}"
    digits = 2 if size < 10_000 else 1 if size < 100_000 else 0
    return f"{value / 1000:.{digits}f}k"


@_figure
def fmt_tokens(value: float) -> str:
    """A token count (a prompt length) with thousands separators: "16,384"."""
    return f"{round(value):,}"


@_figure
def fmt_per_s(value: float) -> str:
    """Requests per second: "0.25"."""
    return f"{value:.2f}"


@_figure
def fmt_count(value: float) -> str:
    """A count: "3"; a mean over a window that is not whole keeps one decimal: "2.5"."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


@_figure
def fmt_duration(seconds: float) -> str:
    """An age or a duration, rounded down: "8 s", "3 min", "2 h 5 min", "3 d"; never negative."""
    whole = int(max(0.0, seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min"
    if whole < 86400:
        hours, minutes = divmod(whole // 60, 60)
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{whole // 86400} d"


@_figure
def fmt_clock(timestamp: float) -> str:
    """Local wall-clock time of day (HH:MM:SS)."""
    return time_module.strftime("%H:%M:%S", time_module.localtime(timestamp))


def position_bars(rates: Sequence[float] | None, limit: int = 4) -> str:
    """Per-position acceptance, a bar and a percent each: "▆80% ▅60%"."""
    if not rates:
        return UNKNOWN
    parts = []
    for rate in list(rates)[:limit]:
        if not known(rate):
            parts.append(UNKNOWN)
            continue
        index = round(min(1.0, max(0.0, rate)) * (len(BAR_CHARS) - 1))
        parts.append(f"{BAR_CHARS[index] if index else '▁'}{fmt_rate(rate)}")
    return " ".join(parts) + ("…" if len(rates) > limit else "")


def marked(text: str, lifetime: bool) -> str:
    """A figure's text, with `LIFETIME_MARK` when it is over the server's lifetime."""
    return f"{text}{LIFETIME_MARK}" if lifetime and text != UNKNOWN else text


def window_text(
    covered_s: float | None,
    window_s: float | None,
    restarted_s_ago: float | None,
    restart_seen_s_ago: float | None = None,
) -> str | None:
    """ "restarted 12 s ago · window 8 s of 60 s" when the figures cover less than usual, else None.
    `restart_seen_s_ago` alone (its start unknown): "restarted over 12 s ago" (before that reading)."""
    parts = []
    if restarted_s_ago is not None:
        parts.append(f"restarted {fmt_duration(restarted_s_ago)} ago")
    elif restart_seen_s_ago is not None:
        parts.append(f"restarted over {fmt_duration(restart_seen_s_ago)} ago")
    if covered_s is not None and window_s is not None and covered_s < 0.5 * window_s:
        parts.append(f"window {fmt_duration(covered_s)} of {fmt_duration(window_s)}")
    return " · ".join(parts) or None


@dataclass(frozen=True)
class FigureWord:
    """How one figure of `Figures` reads: a short label and its formatter."""

    label: str
    format: Callable[[float | None], str]


FIGURES: dict[str, FigureWord] = {
    "generation_tokens_per_s": FigureWord("gen tok/s", fmt_tokens_per_s),
    "prompt_tokens_per_s": FigureWord("prompt+cache", fmt_tokens_per_s),
    "requests_per_s": FigureWord("req/s", fmt_per_s),
    "acceptance_rate": FigureWord("acceptance", fmt_rate),
    "mean_acceptance_length": FigureWord("mean len", fmt_length),
    "per_position_acceptance": FigureWord("per pos", fmt_rate),
    "ttft_mean_s": FigureWord("TTFT mean", fmt_latency),
    "ttft_p50_s": FigureWord("TTFT p50", fmt_latency),
    "ttft_p95_s": FigureWord("TTFT p95", fmt_latency),
    "tpot_mean_s": FigureWord("TPOT", fmt_latency),
    "e2e_mean_s": FigureWord("e2e mean", fmt_latency),
    "running": FigureWord("running", fmt_count),
    "waiting": FigureWord("waiting", fmt_count),
    "kv_cache_usage": FigureWord("KV cache", fmt_rate),
    "prefix_cache_hit_rate": FigureWord("prefix hit", fmt_rate),
}
NOTE_LABELS: dict[str, str] = {"window": "window", **{key: word.label for key, word in FIGURES.items()}}


def lifetime_shown(figures: Figures, key: str) -> bool:
    """Whether figure `key` shows its lifetime value: the window's is unknown, `Figures.lifetime`'s known."""
    lifetime = figures.lifetime
    return lifetime is not None and not _has(figures, key) and _has(lifetime, key)


def _has(figures: Figures, key: str) -> bool:
    value = getattr(figures, key)
    return bool(value) if isinstance(value, list) else known(value)


def shown_figures(figures: Figures, key: str) -> Figures:
    """The figures figure `key` is shown from: the window's, or the lifetime ones (`lifetime_shown`)."""
    if lifetime_shown(figures, key):
        assert figures.lifetime is not None
        return figures.lifetime
    return figures


def figure_text(figures: Figures, key: str, *, positions: int = 8) -> str:
    """The text of figure `key` of `figures`: quantiles as their bound when the bucket says more,
    per-position acceptance as bars (`positions` of them); a lifetime figure with `LIFETIME_MARK`."""
    if lifetime_shown(figures, key):
        assert figures.lifetime is not None
        return figure_text(figures.lifetime, key, positions=positions) + LIFETIME_MARK
    if key == "per_position_acceptance":
        if not figures.per_position_acceptance and figures.per_position_mixed:
            return MIXED
        return position_bars(figures.per_position_acceptance, limit=positions)
    value = getattr(figures, key)
    if key in QUANTILES:
        return fmt_quantile(value, figures.quantile_bounds.get(key))
    return FIGURES[key].format(value)


def fmt_k_in_effect(figures: Figures) -> str:
    """The draft length in effect beside the configured one: "2 of 3", "2.4 of 3 (derived)", "3"."""
    if not known(figures.k_in_effect):
        return UNKNOWN
    text = fmt_count(round(figures.k_in_effect, 1))
    if figures.k_configured is not None:
        text += f" of {figures.k_configured}"
    return text + (" (derived)" if figures.k_in_effect_derived else "")


K_IN_EFFECT = "k in effect"
STEPS_IN_USE = "steps in use"  # SGLang's adaptive steps, in its own word
STEPS_UNKNOWN = "no spec_num_steps from the server and no accept length yet"
TIERS_UNKNOWN = "no spec_num_steps from the server, and its adaptive config file cannot be read here"


def k_in_effect_row(
    figures: Figures, adaptive_steps: tuple[int, ...] | None = None
) -> tuple[str, str, str | None] | None:
    """(label, text, why unknown) of the draft length in effect, or None where nothing tells it: vLLM's
    "k in effect 2 of 3 (derived)"; with SGLang's adaptive tiers "steps in use 3 of 7 (adaptive)" from its
    spec_num_steps gauge, else the least tier that holds the accept length, "(adaptive, derived)"."""
    if adaptive_steps is None:
        return None if figures.k_in_effect is None else (K_IN_EFFECT, fmt_k_in_effect(figures), None)
    of = f" of {max(adaptive_steps)}" if adaptive_steps else ""
    if known(figures.k_in_effect):
        return STEPS_IN_USE, f"{fmt_count(round(figures.k_in_effect))}{of} (adaptive)", None
    if not adaptive_steps:
        return STEPS_IN_USE, UNKNOWN, TIERS_UNKNOWN
    length = figures.mean_acceptance_length
    if not known(length):
        return STEPS_IN_USE, UNKNOWN, STEPS_UNKNOWN
    tier = next((step for step in adaptive_steps if step >= length - 1.0 - 1e-9), adaptive_steps[-1])
    return STEPS_IN_USE, f"{tier}{of} (adaptive, derived)", None


def note_lines(notes: dict[str, str]) -> list[str]:
    """Notes grouped by text, figures by their label: "acceptance, TPOT: from finished requests only"."""
    by_text: dict[str, list[str]] = {}
    for name, text in notes.items():
        by_text.setdefault(text, []).append(NOTE_LABELS.get(name, name))
    return [f"{', '.join(names)}: {text}" for text, names in by_text.items()]
