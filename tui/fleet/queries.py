"""PromQL for every figure of every backend: one query per figure for all instances, `by (instance)`.
The figures mean what they mean in direct scraping (`tui/telemetry/backends/*.py`); a denominator is
guarded with `> 0` (an empty window gives no sample, never 0), and the backends' forms of one figure are
joined with `or`, so the number of queries does not grow with the instances."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tui.telemetry.backends import llamacpp, sglang, vllm
from tui.telemetry.figures import FIGURE_NAMES


def selector(name: str, matchers: str, *extra: str) -> str:
    """`name{extra..., matchers}`: a series selector with the fleet's `--match` matchers added."""
    inner = ",".join(part for part in (*extra, matchers) if part)
    return f"{name}{{{inner}}}" if inner else name


_SGLANG_RANKS = "tp_rank, moe_ep_rank, pid"


@dataclass(frozen=True, slots=True)
class FigureQuery:
    figure: str  # a field of Figures
    expr: str
    by_position: bool = False  # the answer has a `position` label (per-position acceptance)


def duration(seconds: float) -> str:
    """A PromQL duration: whole seconds as `60s`, else milliseconds."""
    milliseconds = max(1, round(seconds * 1000))
    return f"{milliseconds // 1000}s" if milliseconds % 1000 == 0 else f"{milliseconds}ms"


def _sum(expr: str, by: str = "instance") -> str:
    return f"sum by ({by}) ({expr})"


def _avg(expr: str) -> str:
    return f"avg by (instance) ({expr})"


def _ratio(numerator: str, denominator: str) -> str:
    """numerator / denominator where the denominator is positive (else no sample: unknown)."""
    return f"{numerator} / ({denominator} > 0)"


def _either(*exprs: str) -> str:
    return " or ".join(f"({expr})" for expr in exprs if expr)


@dataclass(frozen=True)
class _Forms:
    """Selector and rate helpers for one set of matchers and one window."""

    matchers: str
    window: str
    prefix: str
    ranks: bool = False  # SGLang: fold per-rank copies, read the priority="" totals

    def sel(self, name: str, *extra: str) -> str:
        if self.ranks:
            extra = ('priority=""', *extra)
        return selector(f"{self.prefix}{name}", self.matchers, *extra)

    def _fold(self, expr: str) -> str:
        return f"max without ({_SGLANG_RANKS}) ({expr})" if self.ranks else expr

    def rate(self, name: str, *extra: str) -> str:
        """Per-second increase over the window, per series (rank copies folded)."""
        return self._fold(f"rate({self.sel(name, *extra)}[{self.window}])")

    def gauge(self, name: str, *extra: str) -> str:
        return self._fold(self.sel(name, *extra))

    def names(self, *names: str) -> str:
        """A selector for several metric names at once."""
        pattern = "|".join(f"{self.prefix}{name}" for name in names)
        return selector("", self.matchers, f'__name__=~"{pattern}"')

    def total_rate(self, name: str, *extra: str) -> str:
        return _sum(self.rate(name, *extra))

    def mean(self, histogram: str) -> str:
        return _ratio(self.total_rate(f"{histogram}_sum"), self.total_rate(f"{histogram}_count"))

    def quantile(self, q: float, histogram: str) -> str:
        return f"histogram_quantile({q:g}, {_sum(self.rate(f'{histogram}_bucket'), 'instance, le')})"

    def spec_counters(self) -> dict[str, str]:
        """Acceptance, mean length and per position from vLLM's spec_decode counters (llama.cpp's too)."""
        accepted = self.total_rate("spec_decode_num_accepted_tokens_total")
        drafts = self.total_rate("spec_decode_num_drafts_total")
        by_position = _sum(self.rate("spec_decode_num_accepted_tokens_per_pos_total"), "instance, position")
        return {
            "acceptance_rate": _ratio(accepted, self.total_rate("spec_decode_num_draft_tokens_total")),
            "mean_acceptance_length": f"1 + {_ratio(accepted, drafts)}",
            "per_position_acceptance": f"{by_position} / on (instance) group_left () ({drafts} > 0)",
        }


def _vllm(m: _Forms) -> dict[str, str]:
    has_draft_tokens = f"count by (instance) ({m.sel('spec_decode_num_draft_tokens_total')})"
    has_prefix_queries = f"count by (instance) ({m.sel('prefix_cache_queries_total')})"
    # Names deprecated in 0.9.2 (blocks before 0.9.2; still a hit rate).
    old_hits, old_queries = "gpu_prefix_cache_hits_total", "gpu_prefix_cache_queries_total"
    old_hit_rate = _ratio(m.total_rate(old_hits), m.total_rate(old_queries))
    has_ttft_count = m.total_rate("time_to_first_token_seconds_count")
    step_sum = _either(
        m.total_rate("inter_token_latency_seconds_sum"), m.total_rate("time_per_output_token_seconds_sum")
    )
    generated = m.total_rate("generation_tokens_total")
    # Δstep time / (Δtokens − Δfirst tokens) when no request finished (see backends/vllm.py).
    step_tpot = f"({step_sum}) / (({generated} - ({has_ttft_count} or {generated} * 0)) > 0)"
    spec = m.spec_counters()
    return {
        **spec,
        "generation_tokens_per_s": generated,
        "prompt_tokens_per_s": m.total_rate("prompt_tokens_total"),
        "requests_per_s": m.total_rate("request_success_total"),
        "acceptance_rate": _either(
            spec["acceptance_rate"],
            f"{_avg(m.sel('spec_decode_draft_acceptance_rate'))} unless on (instance) {has_draft_tokens}",
        ),
        "ttft_mean_s": m.mean("time_to_first_token_seconds"),
        "ttft_p50_s": m.quantile(0.5, "time_to_first_token_seconds"),
        "ttft_p95_s": m.quantile(0.95, "time_to_first_token_seconds"),
        "tpot_mean_s": _either(m.mean("request_time_per_output_token_seconds"), step_tpot),
        "e2e_mean_s": m.mean("e2e_request_latency_seconds"),
        "running": _sum(m.gauge("num_requests_running")),
        "waiting": _sum(m.gauge("num_requests_waiting")),
        "kv_cache_usage": _either(
            _avg(m.gauge("kv_cache_usage_perc")), _avg(m.gauge("gpu_cache_usage_perc"))
        ),
        "prefix_cache_hit_rate": _either(
            _ratio(m.total_rate("prefix_cache_hits_total"), m.total_rate("prefix_cache_queries_total")),
            f"{old_hit_rate} unless on (instance) {has_prefix_queries}",
            f"{_avg(m.sel('gpu_prefix_cache_hit_rate'))} unless on (instance) {has_prefix_queries}",
        ),
    }


def _sglang(m: _Forms) -> dict[str, str]:
    counter_length = _ratio(m.total_rate("generation_tokens_total"), m.total_rate("spec_verify_calls_total"))
    running = f"({_sum(m.gauge('num_running_reqs'))} > 0)"
    # The live gauges keep stale values when idle: only while a request runs, and 0 means "off".
    gauge_length = f"({_avg(m.gauge('spec_accept_length'))} > 0) and on (instance) {running}"
    draft_tokens = f"{_avg(m.gauge('spec_num_draft_tokens'))} - 1 > 0"
    live_rate = f"{_avg(m.gauge('spec_accept_rate'))} and on (instance) {running}"
    prompt = m.total_rate("prompt_tokens_total")
    has_itl = f"count by (instance) ({m.sel('inter_token_latency_seconds_count')})"
    pools = m.names("full_token_usage", "swa_token_usage", "mamba_usage")
    # Cache hits by source; a "total" series (when present) must not be counted twice.
    not_total, only_total = 'cache_source!="total"', 'cache_source="total"'
    return {
        "generation_tokens_per_s": _either(
            m.total_rate("realtime_tokens_total", 'mode="decode"'), m.total_rate("generation_tokens_total")
        ),
        "prompt_tokens_per_s": _either(
            m.total_rate("realtime_tokens_total", 'mode=~"prefill_compute|prefill_cache"'), prompt
        ),
        "requests_per_s": m.total_rate("num_requests_total"),
        "acceptance_rate": _either(
            f"clamp((({counter_length}) - 1) / ({draft_tokens}), 0, 1)",
            f"{live_rate} and on (instance) (({counter_length}) or ({gauge_length}))",
        ),
        "mean_acceptance_length": _either(counter_length, gauge_length),
        "ttft_mean_s": m.mean("time_to_first_token_seconds"),
        "ttft_p50_s": m.quantile(0.5, "time_to_first_token_seconds"),
        "ttft_p95_s": m.quantile(0.95, "time_to_first_token_seconds"),
        "tpot_mean_s": _either(
            m.mean("inter_token_latency_seconds"),
            f"{m.mean('time_per_output_token_seconds')} unless on (instance) {has_itl}",
        ),
        "e2e_mean_s": m.mean("e2e_request_latency_seconds"),
        "running": _sum(m.gauge("num_running_reqs")),
        "waiting": _sum(m.gauge("num_queue_reqs")),
        "kv_cache_usage": _either(
            f"max by (instance) (avg by (instance, __name__) ({pools}))",
            _avg(m.gauge("token_usage")),
            _ratio(_sum(m.gauge("kv_used_tokens")), _sum(m.gauge("max_total_num_tokens"))),
        ),
        "prefix_cache_hit_rate": _either(
            f"clamp_max({_ratio(m.total_rate('cached_tokens_total', not_total), prompt)}, 1)",
            f"clamp_max({_ratio(m.total_rate('cached_tokens_total', only_total), prompt)}, 1)",
            _ratio(
                m.total_rate("realtime_tokens_total", 'mode="prefill_cache"'),
                m.total_rate("realtime_tokens_total", 'mode=~"prefill_cache|prefill_compute"'),
            ),
        ),
    }


def _llamacpp(m: _Forms) -> dict[str, str]:
    computed = m.total_rate("prompt_tokens_total")  # excludes cached tokens
    prompt_all = f"({computed} + ({m.total_rate('prompt_tokens_cached_total')} or {computed} * 0))"
    return {
        **m.spec_counters(),
        "generation_tokens_per_s": m.total_rate("tokens_predicted_total"),
        # Like vLLM and SGLang: prompt tokens including those served from the cache.
        "prompt_tokens_per_s": prompt_all,
        # No TPOT: it needs the count of finished requests (one first token each), which llama.cpp only
        # gives through a gauge every scrape resets; a per-token ratio would be a guess (as direct scraping).
        "running": _sum(m.gauge("requests_processing")),
        "waiting": _sum(m.gauge("requests_deferred")),
        "kv_cache_usage": _avg(m.gauge("kv_cache_usage_ratio")),
        "prefix_cache_hit_rate": _ratio(m.total_rate("prompt_tokens_cached_total"), prompt_all),
    }


_BUILDERS: dict[str, tuple[str, bool, Callable[[_Forms], dict[str, str]]]] = {
    "vllm": (vllm.PREFIX, False, _vllm),
    "sglang": (sglang.PREFIX, True, _sglang),
    "llamacpp": (llamacpp.PREFIX, False, _llamacpp),
}

# Every figure of direct scraping has its PromQL form (llama.cpp and SGLang lack some, as direct).
FLEET_FIGURES: tuple[str, ...] = FIGURE_NAMES


def figure_queries(
    matchers: str, window_s: float, figures: tuple[str, ...] = FLEET_FIGURES
) -> list[FigureQuery]:
    """One query per figure, each covering every backend and every instance."""
    window = duration(window_s)
    per_backend = {
        name: builder(_Forms(matchers, window, prefix, ranks=ranks))
        for name, (prefix, ranks, builder) in _BUILDERS.items()
    }
    forms = {
        figure: [exprs[figure] for exprs in per_backend.values() if figure in exprs] for figure in figures
    }
    return [
        FigureQuery(figure, _either(*exprs), by_position=figure == "per_position_acceptance")
        for figure, exprs in forms.items()
        if exprs
    ]


def _marker_names(table_names: list[str], prefix: str) -> str:
    names = sorted(
        name.removeprefix(prefix)
        for name in table_names
        if not name.endswith(("_bucket", "_sum"))  # one name per histogram is enough to vote
    )
    return f"{prefix.rstrip(':')}:({'|'.join(names)})"


def discovery_query(matchers: str, labels: tuple[str, ...], lookback_s: float | None = None) -> str:
    """Per instance and backend: how many of its metric families it has (with `lookback_s`: seen since)."""
    # `backend` is the one put on the counts (a group_by label of that name groups by it too)
    keys = ", ".join(
        key for key in dict.fromkeys(("instance", "job", "model_name", *labels)) if key != "backend"
    )
    counts = []
    for module in (vllm, sglang, llamacpp):
        names = _marker_names(list(module.TABLE), module.PREFIX)
        backend = module.PREFIX.rstrip(":")
        series = selector("", matchers, f'__name__=~"{names}"')
        if lookback_s is not None:
            series = f"last_over_time({series}[{duration(lookback_s)}])"
        count = f"count by ({keys}) (count by ({keys}, __name__) ({series}))"
        counts.append(f'label_replace({count}, "backend", "{backend}", "", "")')
    return " or ".join(counts)


def up_query(matchers: str) -> str:
    return selector("up", matchers)


def up_timestamp_query(matchers: str) -> str:
    """When Prometheus last scraped each target (to tell a stale series from a live one)."""
    return f"timestamp({selector('up', matchers)})"


def engine_queries(matchers: str, window_s: float) -> list[FigureQuery]:
    """vLLM per data-parallel engine: acceptance and tokens/s, of instances with two engines or more."""
    m = _Forms(matchers, duration(window_s), vllm.PREFIX)
    by = "instance, engine"
    accepted = _sum(m.rate("spec_decode_num_accepted_tokens_total"), by)
    drafted = _sum(m.rate("spec_decode_num_draft_tokens_total"), by)
    tokens = _sum(m.rate("generation_tokens_total"), by)
    engines = f"count by (instance) (count by ({by}) ({m.sel('generation_tokens_total')})) > 1"
    return [
        FigureQuery("acceptance_rate", f"({_ratio(accepted, drafted)}) and on (instance) ({engines})"),
        FigureQuery("generation_tokens_per_s", f"{tokens} and on (instance) ({engines})"),
    ]
