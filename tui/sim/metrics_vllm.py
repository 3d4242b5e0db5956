"""vLLM's /metrics page (names, HELP, labels, buckets and order of v0.28.0) on a private prometheus_client
registry; counters move when vLLM moves them (spec per request-step, prompt at the first token)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import CollectorRegistry as _Registry

from tui.sim.config import SimConfig
from tui.sim.engine import MetricsRecorder, SimRequest, StepReport

# vLLM's bucket bounds, as its source writes them
TTFT_BUCKETS = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
    80.0, 160.0, 640.0, 2560.0,
]  # fmt: skip
ITL_BUCKETS = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
]  # fmt: skip
REQUEST_LATENCY_BUCKETS = [
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
    960.0, 1920.0, 7680.0,
]  # fmt: skip
ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
HTTP_HIGHR_BUCKETS = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 7.5, 10.0,
    30.0, 60.0,
]  # fmt: skip
# (key, name, HELP, buckets: None for the 1-2-5 token buckets up to max_model_len), in vLLM's order
REQUEST_HISTOGRAMS: tuple[tuple[str, str, str, Sequence[float] | None], ...] = (
    ("prompt_tokens", "request_prompt_tokens", "Number of prefill tokens processed.", None),
    ("generation_tokens", "request_generation_tokens", "Number of generation tokens processed.", None),
    ("iteration_tokens", "iteration_tokens_total", "Histogram of number of tokens per engine_step.",
     ITERATION_TOKEN_BUCKETS),
    ("max_generation_tokens", "request_max_num_generation_tokens",
     "Histogram of maximum number of requested generation tokens.", None),
    ("params_n", "request_params_n", "Histogram of the n request parameter.", [1, 2, 5, 10, 20]),
    ("params_max_tokens", "request_params_max_tokens", "Histogram of the max_tokens request parameter.",
     None),
    ("ttft", "time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS),
    ("itl", "inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS),
    ("tpot", "request_time_per_output_token_seconds",
     "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS),
    ("e2e", "e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
     REQUEST_LATENCY_BUCKETS),
    ("queue_time", "request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
     REQUEST_LATENCY_BUCKETS),
    ("inference_time", "request_inference_time_seconds",
     "Histogram of time spent in RUNNING phase for request.", REQUEST_LATENCY_BUCKETS),
    ("prefill_time", "request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
     REQUEST_LATENCY_BUCKETS),
    ("decode_time", "request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
     REQUEST_LATENCY_BUCKETS),
    ("kv_computed", "request_prefill_kv_computed_tokens",
     "Histogram of new KV tokens computed during prefill (excluding cached tokens).", None),
)  # fmt: skip
PER_POS = "spec_decode_num_accepted_tokens_per_pos"
# (kind, name, HELP, extra label, its values) after the spec families, in vLLM's order; keyed name[/value]
Family = tuple[type[Counter] | type[Gauge], str, str, str, tuple[str, ...]]
FAMILIES: tuple[Family, ...] = (
    (Counter, "estimated_flops_per_gpu_total", "Estimated number of floating point operations per GPU (for "
     "Model Flops Utilization calculations).", "", ()),
    (Counter, "estimated_read_bytes_per_gpu_total", "Estimated number of bytes read from memory per GPU (for "
     "Model Flops Utilization calculations).", "", ()),
    (Counter, "estimated_write_bytes_per_gpu_total", "Estimated number of bytes written to memory per GPU "
     "(for Model Flops Utilization calculations).", "", ()),
    (Gauge, "num_requests_running", "Number of requests in model execution batches.", "", ()),
    (Gauge, "num_requests_waiting", "Number of requests waiting to be processed.", "", ()),
    (Gauge, "num_requests_waiting_by_reason",
     "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; "
     "'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). "
     "Sum of all reasons equals vllm:num_requests_waiting.", "reason", ("capacity", "deferred")),
    (Gauge, "engine_sleep_state",
     "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "
     "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
     "sleep_state", ("awake", "weights_offloaded", "discard_all")),
    (Gauge, "kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "", ()),
    (Counter, "prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", "", ()),
    (Counter, "prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", "", ()),
    (Counter, "external_prefix_cache_queries", "External prefix cache queries from KV connector "
     "cross-instance cache sharing, in terms of number of queried tokens.", "", ()),
    (Counter, "external_prefix_cache_hits", "External prefix cache hits from KV connector "
     "cross-instance cache sharing, in terms of number of cached tokens.", "", ()),
    (Counter, "mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items.", "", ()),
    (Counter, "mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items.", "", ()),
    (Counter, "num_preemptions", "Cumulative number of preemption from the engine.", "", ()),
    (Counter, "prompt_tokens", "Number of prefill tokens processed.", "", ()),
    (Counter, "prompt_tokens_by_source", "Number of prompt tokens by source.", "source",
     ("local_compute", "local_cache_hit", "external_kv_transfer")),
    (Counter, "prompt_tokens_cached", "Number of cached prompt tokens (local + external).", "", ()),
    (Counter, "generation_tokens", "Number of generation tokens processed.", "", ()),
    (Counter, "request_success", "Count of successfully processed requests.", "finished_reason",
     ("stop", "length", "abort", "error", "repetition")),
)  # fmt: skip


HEADER_ONLY = "Only value of header is respected. Otherwise ignored. No percentile calculated. "
# cache_config_info's labels that the simulated config does not set
CACHE_CONFIG_INFO = {
    **dict.fromkeys(("cache_dtype", "mamba_cache_dtype", "mamba_ssm_cache_dtype"), "auto"),
    **dict.fromkeys(
        ("is_attention_free", "kv_sharing_fast_prefill", "use_kda_recoverssm", "use_replayssm",
         "user_specified_block_size", "user_specified_mamba_block_size"),
        "False",
    ),
    **dict.fromkeys(
        ("kv_cache_memory_bytes", "kv_offloading_size", "mamba_block_size", "mamba_page_size_padded",
         "num_cpu_blocks", "num_gpu_blocks_override", "prefix_match_unit", "skip_page_size_padded",
         "sliding_window"),
        "None",
    ),
    "_block_size_resolved": "True",
    "engine": "0",
    "kv_cache_dtype_skip_layers": "[]",
    "kv_offloading_backend": "native",
    "mamba_cache_mode": "none",
    "prefix_cache_retention_interval": "0",
    "prefix_caching_hash_algo": "sha256",
    "replayssm_buffer_len": "16",
}  # fmt: skip
INSTRUMENTATOR_EXCLUDED = {"/metrics", "/health", "/load", "/ping", "/version", "/server_info"}
LABELS = ["model_name", "engine"]


class _SimulatedProcessCollector(ProcessCollector):
    """The process figures, with the simulated server's start time: a restart (SIGHUP, a new recorder)
    is a new server, as a real restart is a new process (spectop tells them apart by it)."""

    def __init__(self, started: float, registry: _Registry) -> None:
        self._started = started  # before super().__init__, which collects once to register
        super().__init__(registry=registry)

    def collect(self) -> Iterator[Metric]:
        for family in super().collect():
            if family.name == "process_start_time_seconds":
                family = GaugeMetricFamily(family.name, family.documentation, value=self._started)
            yield family


class VllmRecorder(MetricsRecorder):
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, config: SimConfig, started: float | None = None) -> None:
        self.config = config
        # The simulated server's start; kept by a counter reset the scraper must not notice.
        self.started = time.time() if started is None else started
        self.registry = registry = CollectorRegistry()
        GCCollector(registry=registry)
        PlatformCollector(registry=registry)
        _SimulatedProcessCollector(self.started, registry)
        labels, k = {"model_name": config.model_name, "engine": "0"}, config.k
        self.counters: dict[str, Counter] = {}
        self.gauges: dict[str, Gauge] = {}
        spec: tuple[Family, ...] = (  # first, with speculation on
            (Counter, "spec_decode_num_drafts", "Number of spec decoding drafts.", "", ()),
            (Counter, "spec_decode_num_draft_tokens", "Number of draft tokens.", "", ()),
            (Counter, "spec_decode_num_accepted_tokens", "Number of accepted tokens.", "", ()),
            (Counter, PER_POS, "Accepted tokens per draft position.", "position", tuple(map(str, range(k)))),
        )
        for kind, name, documentation, label, values in (spec if k else ()) + FAMILIES:
            metric = kind(
                f"vllm:{name}", documentation, [*LABELS, *([label] if label else [])], registry=registry
            )
            for value in values or ("",):
                child = metric.labels(**labels, **({label: value} if label else {}))
                key = f"{name}/{value}" if label else name
                if isinstance(child, Counter):
                    self.counters[key] = child
                else:
                    self.gauges[key] = child
        for state, awake in (("awake", 1), ("weights_offloaded", 0), ("discard_all", 0)):
            self.gauges[f"engine_sleep_state/{state}"].set(awake)
        self.per_pos = [self.counters[f"{PER_POS}/{i}"] for i in range(k)]
        # vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to max_model_len
        token_buckets = [
            float(m * 10**e) for e in range(20) for m in (1, 2, 5) if m * 10**e <= config.max_model_len
        ]
        self.histograms = {
            key: Histogram(
                f"vllm:{name}", documentation, LABELS, buckets=buckets or token_buckets, registry=registry
            ).labels(**labels)
            for key, name, documentation, buckets in REQUEST_HISTOGRAMS
        }
        blocks = config.kv_cache_tokens() // config.block_size
        info = CACHE_CONFIG_INFO | {
            "block_size": str(config.block_size),
            "enable_prefix_caching": str(config.enable_prefix_caching),
            "gpu_memory_utilization": str(config.gpu_memory_utilization),
            "kv_cache_max_concurrency": str(config.kv_cache_tokens() / config.max_model_len),
            "kv_cache_size_tokens": str(blocks * config.block_size),
            "num_gpu_blocks": str(blocks),
        }
        info = dict(sorted(info.items()))  # vLLM's label order
        doc = "Information of the LLMEngine CacheConfig"
        Gauge("vllm:cache_config_info", doc, list(info), registry=registry).labels(**info).set(1)
        self._http(registry)

    def _http(self, registry: CollectorRegistry) -> None:
        """prometheus-fastapi-instrumentator's families, which vLLM's API server registers."""
        doc = "Total number of requests by method, status and handler."
        self.http_total = Counter(
            "http_requests_total", doc, ["method", "status", "handler"], registry=registry
        )
        self.http_request_size, self.http_response_size = (
            Summary(
                f"http_{what}_size_bytes",
                f"Content length of {words} by handler. {HEADER_ONLY}",
                ["handler"],
                registry=registry,
            )
            for what, words in (("request", "incoming requests"), ("response", "outgoing responses"))
        )
        self.http_highr = Histogram(
            "http_request_duration_highr_seconds",
            "Latency with many buckets but no API specific labels. Made for more accurate percentile "
            "calculations. ",
            buckets=HTTP_HIGHR_BUCKETS,
            registry=registry,
        )
        self.http_duration = Histogram(
            "http_request_duration_seconds",
            "Latency with only few buckets by handler. Made to be only used if aggregation by handler is "
            "important. ",
            ["handler", "method"],
            buckets=[0.1, 0.5, 1],
            registry=registry,
        )

    # ---- engine hooks ---------------------------------------------------------------------------
    def request_scheduled(self, request: SimRequest) -> None:
        self.counters["prefix_cache_queries"].inc(request.prompt_tokens)
        self.counters["prefix_cache_hits"].inc(request.cached_tokens)

    def step_done(self, report: StepReport) -> None:
        counters = self.counters
        for record in report.records:
            request = record.request
            if record.first:
                counters["prompt_tokens"].inc(request.prompt_tokens)
                counters["prompt_tokens_by_source/local_compute"].inc(request.computed_prompt_tokens)
                counters["prompt_tokens_by_source/local_cache_hit"].inc(request.cached_tokens)
                counters["prompt_tokens_cached"].inc(request.cached_tokens)
                ttft = max(0.0, (request.first_token_at or report.end) - request.arrival)
                self.histograms["ttft"].observe(ttft)
            else:
                self.histograms["itl"].observe(record.gap_s)
        generated = sum(record.emitted for record in report.records)
        counters["generation_tokens"].inc(generated)
        drafts, drafted, accepted, per_pos = report.drafts(len(self.per_pos))
        if drafts:
            counters["spec_decode_num_drafts"].inc(drafts)
            counters["spec_decode_num_draft_tokens"].inc(drafted)
            counters["spec_decode_num_accepted_tokens"].inc(accepted)
            for child, count in zip(self.per_pos, per_pos, strict=True):
                if count:
                    child.inc(count)
        computed = sum(request.computed_prompt_tokens for request in report.prefilled)
        self.histograms["iteration_tokens"].observe(computed + generated)
        self.load_changed(report.running, report.waiting, report.kv_used_tokens, report.kv_capacity_tokens)

    def load_changed(self, running: int, waiting: int, kv_used_tokens: int, kv_capacity_tokens: int) -> None:
        self.gauges["num_requests_running"].set(running)
        self.gauges["num_requests_waiting"].set(waiting)
        self.gauges["num_requests_waiting_by_reason/capacity"].set(waiting)
        self.gauges["kv_cache_usage_perc"].set(kv_used_tokens / kv_capacity_tokens)

    def request_finished(self, request: SimRequest) -> None:
        self.counters[f"request_success/{request.finish_reason or 'abort'}"].inc()
        if request.first_token_at is None or request.finished_at is None:
            return
        scheduled = request.scheduled_at or request.arrival
        decode_s = request.finished_at - request.first_token_at
        observed = {
            "prompt_tokens": request.prompt_tokens,
            "generation_tokens": request.generated,
            "params_max_tokens": request.max_tokens if request.max_tokens_given else None,
            "e2e": request.finished_at - request.arrival,
            "queue_time": scheduled - request.arrival,
            "inference_time": request.finished_at - scheduled,
            "prefill_time": request.first_token_at - scheduled,
            "decode_time": decode_s,
            "tpot": decode_s / (request.generated - 1) if request.generated > 1 else 0.0,
            "kv_computed": request.computed_prompt_tokens,
        }
        for key, observation in observed.items():
            if observation is not None:
                self.histograms[key].observe(observation)

    # ---- HTTP and exposition --------------------------------------------------------------------
    def http_request(
        self, method: str, path: str, status: int, request_bytes: int, response_bytes: int, duration_s: float
    ) -> None:
        if path in INSTRUMENTATOR_EXCLUDED or path.startswith("/sim/"):
            return
        self.http_total.labels(method=method, status=f"{status // 100}xx", handler=path).inc()
        self.http_request_size.labels(handler=path).observe(request_bytes)
        self.http_response_size.labels(handler=path).observe(response_bytes)
        self.http_highr.observe(duration_s)
        self.http_duration.labels(handler=path, method=method).observe(duration_s)

    def render(self) -> bytes:
        return generate_latest(self.registry)
