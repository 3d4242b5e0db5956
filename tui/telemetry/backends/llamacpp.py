"""llama.cpp `llama-server --metrics`: metric names and figure derivation.

No labels except `position`; values are C++ doubles with 6 significant digits.
`tokens_predicted_*` and the `spec_decode_*` counters move only when a request
finishes; the per-position family is absent until the first speculative
request finished (a series missing at the start of a window counts from 0).
No TTFT or E2E histograms and no KV usage (unless an old build still exposes
`kv_cache_usage_ratio`).

Finished requests and per-token latency: the gauge `predicted_tokens_seconds`
covers exactly the requests finished since the previous scrape and counts
n − 1 decode tokens per request over their generation time. So for each pair
of consecutive scrapes, decode tokens = gauge × Δtokens_predicted_seconds and
finished requests = Δtokens_predicted − decode tokens (an integer; when it is
not, another scraper reset the gauge and spectop falls back to
Δseconds / Δtokens for the latency and shows no request rate).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from tui.telemetry.backends.base import (
    Delta,
    Kind,
    Metric,
    MetricTable,
    Reading,
    per_position,
    rate,
    ratio,
)
from tui.telemetry.backends.base import extract as extract_table
from tui.telemetry.figures import Figures
from tui.telemetry.prometheus import Sample

NAME = "llamacpp"
PREFIX = "llamacpp:"

TABLE: MetricTable = {
    "llamacpp:prompt_tokens_total": Metric(Kind.COUNTER, "prompt_tokens"),  # excludes cached tokens
    "llamacpp:prompt_tokens_cached_total": Metric(Kind.COUNTER, "prompt_tokens_cached"),
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


def extract(samples: Iterable[Sample]) -> Reading:
    return extract_table(samples, TABLE)


def segment_extras(start: Reading, end: Reading, segment: Delta) -> dict[str, float]:
    """Finished requests and decode tokens between two consecutive scrapes (NaN when unknown)."""
    tokens = segment.total("tokens_predicted")
    seconds = segment.total("tokens_predicted_seconds")
    if tokens is None or seconds is None:
        return {}  # a restart: nothing to count
    if tokens == 0:
        return {"requests": 0.0, "decode_tokens": 0.0}
    gauge = end.gauges.get("predicted_tokens_seconds")
    if gauge is None or seconds <= 0 or gauge <= 0:
        return dict(_UNKNOWN)
    requests = tokens - gauge * seconds
    if not math.isfinite(requests):
        return dict(_UNKNOWN)
    whole = round(requests)
    # Printed values carry 6 significant digits: allow for that rounding.
    magnitude = max(abs(value) for key, value in end.counters.items() if key[0] == "tokens_predicted")
    tolerance = 0.1 + 1e-5 * (magnitude + gauge * seconds)
    if whole < 1 or whole > tokens or abs(requests - whole) > tolerance:
        return dict(_UNKNOWN)
    return {"requests": float(whole), "decode_tokens": tokens - whole}


def derive(delta: Delta | None, last: Reading) -> Figures:
    drafts = delta.total("drafts") if delta else None
    accepted = delta.total("accepted") if delta else None
    requests_per_s = None
    tpot = None
    prefix_hit_rate = None
    prompt_rate = None
    if delta is not None:
        requests = delta.extras.get("requests", math.nan)
        if not math.isnan(requests):
            requests_per_s = ratio(requests, delta.seconds)
        seconds = delta.total("tokens_predicted_seconds")
        decode_tokens = delta.extras.get("decode_tokens", math.nan)
        tpot = (
            ratio(seconds, delta.total("tokens_predicted"))
            if math.isnan(decode_tokens)
            else ratio(seconds, decode_tokens)
        )
        cached = delta.total("prompt_tokens_cached")
        computed = delta.total("prompt_tokens")
        if cached is not None and computed is not None:
            prefix_hit_rate = ratio(cached, cached + computed)
        if computed is not None:
            # Like vLLM and SGLang: prompt tokens including those served from the cache.
            prompt_rate = ratio(computed + (cached or 0.0), delta.seconds)
    mean_length = ratio(accepted, drafts)
    return Figures(
        generation_tokens_per_s=rate(delta, "tokens_predicted"),
        prompt_tokens_per_s=prompt_rate,
        requests_per_s=requests_per_s,
        acceptance_rate=ratio(accepted, delta.total("draft_tokens")) if delta else None,
        mean_acceptance_length=None if mean_length is None else 1.0 + mean_length,
        per_position_acceptance=per_position(delta, "accepted_per_pos", drafts),
        tpot_mean_s=tpot,
        running=last.gauges.get("running"),
        waiting=last.gauges.get("waiting"),
        kv_cache_usage=last.gauges.get("kv_cache_usage"),
        prefix_cache_hit_rate=prefix_hit_rate,
    )
