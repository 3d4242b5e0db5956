"""llama.cpp `llama-server --metrics`: metric names and figure derivation. Its counters move when a request
finishes and print 6 significant digits; finished requests come from the `predicted_tokens_seconds` gauge
(reset by every GET, so another scraper makes them unknown); `/slots` adds the live tokens."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

from tui.telemetry.backends.base import (
    Delta,
    Kind,
    Metric,
    MetricTable,
    PageSnapshot,
    SeriesMemo,
    rate,
    ratio,
    speculation,
)
from tui.telemetry.backends.base import extract as extract_table
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import Sample

NAME = "llamacpp"
PREFIX = "llamacpp:"

TABLE: MetricTable = {
    "llamacpp:prompt_tokens_total": Metric(Kind.COUNTER, "prompt_tokens"),  # excludes cached tokens
    "llamacpp:prompt_tokens_cached_total": Metric(Kind.COUNTER, "prompt_tokens_cached"),
    "llamacpp:prompt_seconds_total": Metric(Kind.COUNTER, "prompt_seconds"),
    "llamacpp:prompt_tokens_seconds": Metric(Kind.GAUGE_MEAN, "prompt_tokens_seconds"),
    "llamacpp:tokens_predicted_total": Metric(Kind.COUNTER, "tokens_predicted"),
    "llamacpp:tokens_predicted_seconds_total": Metric(Kind.COUNTER, "tokens_predicted_seconds"),
    "llamacpp:spec_decode_num_draft_tokens_total": Metric(Kind.COUNTER, "draft_tokens"),
    "llamacpp:spec_decode_num_accepted_tokens_total": Metric(Kind.COUNTER, "accepted"),
    "llamacpp:spec_decode_num_drafts_total": Metric(Kind.COUNTER, "drafts"),
    "llamacpp:spec_decode_num_accepted_tokens_per_pos_total": Metric(
        Kind.COUNTER, "accepted_per_pos", split_label="position"
    ),
    "llamacpp:predicted_tokens_seconds": Metric(Kind.GAUGE_MEAN, "predicted_tokens_seconds"),
    "llamacpp:requests_processing": Metric(Kind.GAUGE_SUM, "running"),
    "llamacpp:requests_deferred": Metric(Kind.GAUGE_SUM, "waiting"),
    # Removed upstream (PR 13660); shown when an older build still has it.
    "llamacpp:kv_cache_usage_ratio": Metric(Kind.GAUGE_MEAN, "kv_cache_usage"),
}

_UNKNOWN = {"requests": math.nan, "decode_tokens": math.nan}
# Why a segment's request count is unknown (counted per segment, summed over the window).
_DIGITS = "unknown_by_digits"
_RESET = "unknown_by_reset"
# Documented to appear only after the first speculative request finished: counts from 0.
ZERO_START = ("accepted_per_pos:",)
RUNNING_MAX = ("live_tokens",)
_LIVE_KEY = ("live_tokens", (), None)
FINISHED_ONLY = "from finished requests only (llama.cpp counts a request when it ends)"
NO_PROMPT_LENGTHS = "llama.cpp exports no per-request prompt lengths"
_FINISHED_FIGURES = ("acceptance_rate", "mean_acceptance_length", "per_position_acceptance", "tpot_mean_s")
_SIGNIFICANT_DIGITS = 6


def extract(samples: Iterable[Sample], memo: SeriesMemo | None = None) -> PageSnapshot:
    return extract_table(samples, TABLE, memo=memo)


def live_counters(page: PageSnapshot, extra: Mapping[str, float]) -> PageSnapshot:
    """The page with `live_tokens` = tokens_predicted_total + Σ n_decoded of running slots."""
    decoded = extra.get("slots_decoded")
    finished = page.counters.get(("tokens_predicted", (), None))
    if decoded is None or finished is None or not math.isfinite(decoded) or decoded < 0:
        return page
    return replace(page, counters={**page.counters, _LIVE_KEY: finished + decoded})


def printed_uncertainty(value: float) -> float:
    """Half a unit in the last of the 6 significant digits llama.cpp prints."""
    if value == 0 or not math.isfinite(value):
        return 0.0
    if value.is_integer() and abs(value) < 10**_SIGNIFICANT_DIGITS:
        return 0.0  # printed in full
    exponent = math.floor(math.log10(abs(value)))
    return 0.5 * 10.0 ** (exponent - _SIGNIFICANT_DIGITS + 1)


def _counter(page: PageSnapshot, quantity: str) -> float:
    return page.counters.get((quantity, (), None), 0.0)


def _uncertainty(start: PageSnapshot, end: PageSnapshot, quantity: str) -> float:
    return printed_uncertainty(_counter(start, quantity)) + printed_uncertainty(_counter(end, quantity))


def _prompt_gauge_matches(start: PageSnapshot, end: PageSnapshot, segment: Delta) -> bool:
    """False when another scraper reset the prompt gauge within this segment."""
    tokens = segment.total("prompt_tokens")
    seconds = segment.total("prompt_seconds")
    gauge = end.gauges.get("prompt_tokens_seconds")
    if not tokens or seconds is None or seconds <= 0 or gauge is None:
        return True  # no prompt processed, or an older build: nothing to compare
    expected = gauge * seconds
    tolerance = (
        _uncertainty(start, end, "prompt_tokens")
        + gauge * _uncertainty(start, end, "prompt_seconds")
        + seconds * printed_uncertainty(gauge)
        + 1e-6 * tokens
    )
    return abs(expected - tokens) <= tolerance


def segment_extras(start: PageSnapshot, end: PageSnapshot, segment: Delta) -> dict[str, float]:
    """Per pair of scrapes: finished requests, decode tokens (NaN: unknown), live token coverage."""
    live = _LIVE_KEY in end.counters and (_LIVE_KEY in start.counters or not start.counters)
    coverage = {"segments": 1.0, "live_segments": 1.0 if live else 0.0}
    return coverage | _finished_requests(start, end, segment)


def _finished_requests(start: PageSnapshot, end: PageSnapshot, segment: Delta) -> dict[str, float]:
    tokens = segment.total("tokens_predicted")
    seconds = segment.total("tokens_predicted_seconds")
    if tokens is None or seconds is None:
        return {}  # a new baseline: nothing to count
    if tokens == 0:
        return {"requests": 0.0, "decode_tokens": 0.0}
    gauge = end.gauges.get("predicted_tokens_seconds")
    if gauge is None or seconds <= 0 or gauge <= 0:
        return dict(_UNKNOWN)
    requests = tokens - gauge * seconds
    if not math.isfinite(requests):
        return dict(_UNKNOWN)
    whole = round(requests)
    # How far off the printed values can make `requests`: each of the four printed counters and the
    # gauge is exact to half a unit in its sixth significant digit (and no better).
    uncertainty = (
        _uncertainty(start, end, "tokens_predicted")
        + gauge * _uncertainty(start, end, "tokens_predicted_seconds")
        + seconds * printed_uncertainty(gauge)
    )
    tolerance = uncertainty + 1e-6 * max(1.0, tokens)  # float noise of the arithmetic itself
    if tolerance >= 0.25:
        return _UNKNOWN | {_DIGITS: 1.0}  # the printed digits cannot tell one request more or less
    if whole < 1 or whole > tokens or abs(requests - whole) > tolerance:
        return _UNKNOWN | {_RESET: 1.0}  # the gauge does not cover this segment: another GET reset it
    if not _prompt_gauge_matches(start, end, segment):
        return _UNKNOWN | {_RESET: 1.0}
    return {"requests": float(whole), "decode_tokens": tokens - whole}


_GAUGE_RESET = (
    "unknown: another client also scrapes /metrics (llama.cpp resets predicted_tokens_seconds on every "
    "GET, and the gauge no longer matches the counters)"
)
_TOO_FEW_DIGITS = (
    "unknown: llama.cpp prints its counters with 6 significant digits, too few at these totals to count "
    "the finished requests (tokens_predicted_seconds_total is rounded to more than a token's time)"
)


def _unknown_count_note(delta: Delta) -> str:
    digits, reset = delta.extras.get(_DIGITS, 0.0), delta.extras.get(_RESET, 0.0)
    if digits and reset:
        return f"{_GAUGE_RESET}; and {_TOO_FEW_DIGITS.removeprefix('unknown: ')}"
    return _TOO_FEW_DIGITS if digits else _GAUGE_RESET


def derive(delta: Delta | None, last: PageSnapshot) -> Figures:
    requests_per_s = tpot = prefix_hit_rate = prompt_rate = generation_rate = None
    notes: dict[str, str] = {}
    if delta is not None:
        requests = delta.extras.get("requests", math.nan)
        if not math.isnan(requests):
            requests_per_s = ratio(requests, delta.seconds)
        elif delta.total("tokens_predicted"):
            notes["requests_per_s"] = _unknown_count_note(delta)
        decode_tokens = delta.extras.get("decode_tokens", math.nan)
        if not math.isnan(decode_tokens):
            tpot = ratio(delta.total("tokens_predicted_seconds"), decode_tokens)
        elif delta.total("tokens_predicted"):
            # TPOT is generation time / (tokens - one first token per request): without the request
            # count it would be a guess (low by a token per request, a lot for short replies).
            notes["tpot_mean_s"] = _unknown_count_note(delta)
        cached, computed = delta.total("prompt_tokens_cached"), delta.total("prompt_tokens")
        if cached is not None and computed is not None:
            prefix_hit_rate = ratio(cached, cached + computed)
        if computed is not None:
            # Like vLLM and SGLang: prompt tokens including those served from the cache.
            prompt_rate = ratio(computed + (cached or 0.0), delta.seconds)
        segments = delta.extras.get("segments", 0.0)
        if segments and delta.extras.get("live_segments") == segments:  # /slots answered all along
            generation_rate = rate(delta, "live_tokens")
        else:
            generation_rate = rate(delta, "tokens_predicted")
            notes["generation_tokens_per_s"] = FINISHED_ONLY + "; live with --slots"
    acceptance_rate, mean_length, positions = speculation(delta)
    if delta is not None:
        for name in _FINISHED_FIGURES:
            notes.setdefault(name, FINISHED_ONLY)
    notes["prompt_tokens_mean"] = NO_PROMPT_LENGTHS
    return Figures(
        generation_tokens_per_s=generation_rate,
        prompt_tokens_per_s=prompt_rate,
        requests_per_s=requests_per_s,
        acceptance_rate=acceptance_rate,
        mean_acceptance_length=mean_length,
        per_position_acceptance=positions,
        tpot_mean_s=tpot,
        running=last.gauges.get("running"),
        waiting=last.gauges.get("waiting"),
        kv_cache_usage=last.gauges.get("kv_cache_usage"),
        prefix_cache_hit_rate=prefix_hit_rate,
        notes=notes,
    )
