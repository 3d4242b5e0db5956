"""SGLang's /metrics page (v0.5.15, multiprocess mode): a custom collector builds the families because that
mode prints histograms as `_sum`, buckets, `_count` without `_created`; scheduler series carry `tp_rank`."""

from __future__ import annotations

import bisect
import itertools
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from tui.sim.behaviour import AdaptiveSteps
from tui.sim.config import SimConfig
from tui.sim.engine import MetricsRecorder, SimRequest, StepReport

TOKEN_BUCKETS = [
    100.0, 300.0, 500.0, 700.0, 1000.0, 1500.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0, 7000.0, 8000.0,
    9000.0, 10000.0, 12500.0, 15000.0, 17500.0, 20000.0, 22500.0, 25000.0, 27500.0, 30000.0, 35000.0,
    40000.0, 60000.0, 80000.0, 100000.0, 200000.0, 300000.0, 400000.0, 600000.0, 800000.0, 1000000.0,
    1100000.0,
]  # fmt: skip
TTFT_BUCKETS = [
    0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0,
]  # fmt: skip
ITL_BUCKETS = [
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
    0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
]  # fmt: skip
E2E_BUCKETS = [*TTFT_BUCKETS, 600.0, 1200.0, 1800.0, 2400.0]
QUEUE_BUCKETS = [  # seconds: fine below 20, then steps of 10, 100 and 200
    *(0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 15.0),
    *(float(seconds) for seconds in range(20, 101, 10)),
    *(float(seconds) for seconds in range(200, 1001, 100)),
    *(float(seconds) for seconds in range(1200, 2001, 200)),
    2500.0,
    3000.0,
]
STAGE_BUCKETS = [0.001 * 1.62**i for i in range(30)]
ROUTING_BOUNDS = ["0", "1", "2", "3", "5", "7", "10", "20", "50", "100", "200", "+Inf"]

SCHEDULER_GAUGES = (
    ("num_running_reqs", "The number of running requests."),
    ("num_queue_reqs", "The number of requests in the waiting queue."),
    ("num_grammar_queue_reqs", "The number of requests in the grammar waiting queue."),
    ("gen_throughput", "The generation throughput (token/s)."),
    ("cache_hit_rate", "The prefix cache hit rate."),
    ("decode_sum_seq_lens", "The sum of all sequence lengths in decode."),
    ("token_usage", "The token usage."),
    ("full_token_usage", "The token usage for full attention layers."),
    ("swa_token_usage", "The token usage for SWA layers."),
    ("mamba_usage", "The token usage for Mamba layers."),
    ("num_used_tokens", "The number of used tokens."),
    ("kv_available_tokens", "Number of free token slots in the KV cache pool."),
    ("kv_evictable_tokens", "Number of evictable (radix-cached) token slots in the KV cache pool."),
    ("kv_used_tokens", "Number of actively used token slots in the KV cache pool."),
    ("swa_available_tokens", "Number of free token slots in the SWA pool (hybrid-SWA only)."),
    ("swa_evictable_tokens", "Number of evictable (radix-cached) token slots in the SWA pool."),
    ("swa_used_tokens", "Number of actively used token slots in the SWA pool."),
    ("mamba_available_tokens", "Number of free state slots in the mamba SSM pool (hybrid-SSM only)."),
    ("mamba_evictable_tokens", "Number of evictable (radix-cached) state slots in the mamba SSM pool."),
    ("mamba_used_tokens", "Number of actively used state slots in the mamba SSM pool."),
    (
        "spec_accept_length",
        "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).",
    ),
    ("spec_accept_rate", "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch)."),
    (
        "spec_cap_length",
        "Mean DSpark confidence-scheduled verify window per verify step, incl the bonus slot "
        "(0 when no cap is scheduled).",
    ),
    (
        "spec_block_accept_length",
        "Mean uncapped full-block accept length per verify step "
        "(accept + cap-trimmed "
        "drafts; exact only in DSpark cap-accept mode).",
    ),
    ("spec_num_steps", "Currently active speculative_num_steps."),
    (
        "spec_num_draft_tokens",
        "Currently active speculative_num_draft_tokens (decouples from steps under topk>1).",
    ),
    ("num_retracted_reqs", "The number of retracted requests."),
    ("num_paused_reqs", "The number of paused requests by async weight sync."),
    ("num_prefill_bootstrap_queue_reqs", "The number of requests in the prefill bootstrap queue."),
    ("num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue."),
    ("num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue."),
    ("num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue."),
    (
        "pending_prealloc_token_usage",
        "The token usage for pending preallocated tokens (not preallocated yet).",
    ),
    ("utilization", "The utilization."),
    ("fwd_occupancy", "Forward pass GPU occupancy percentage."),
    ("new_token_ratio", "The new token ratio."),
    ("is_cuda_graph", "Whether the batch is using CUDA graph."),
    ("num_unique_running_routing_keys", "Number of unique routing keys in running batch."),
)
CONSTANTS = (
    ("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool."),
    ("engine_startup_time", "The time taken for the engine to start up."),
    ("engine_load_weights_time", "The time taken for the engine to load weights."),
    ("page_size", "KV cache page size in tokens."),
    ("num_pages", "Number of KV cache pages."),
    ("context_len", "Maximum context length."),
    ("startup_available_gpu_memory_gb", "Available GPU memory in GB at startup."),
)
# The tokenizer manager's families, in SGLang's order: (name, HELP, buckets; None for a counter)
TOKENIZER_FAMILIES: tuple[tuple[str, str, list[float] | None], ...] = (
    ("prompt_tokens", "Number of prefill tokens processed.", None),
    ("generation_tokens", "Number of generation tokens processed.", None),
    ("spec_verify_calls", "Number of speculative decoding verification calls.", None),
    ("prompt_tokens_histogram", "Histogram of prompt token length.", TOKEN_BUCKETS),
    ("uncached_prompt_tokens_histogram", "Histogram of uncached (compute) prompt token length.",
     TOKEN_BUCKETS),
    ("generation_tokens_histogram", "Histogram of generation token length.", TOKEN_BUCKETS),
    ("cached_tokens", "Number of cached prompt tokens by source (device/host/storage).", None),
    ("num_requests", "Number of requests processed.", None),
    ("time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS),
    ("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS),
    ("e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", E2E_BUCKETS),
)  # fmt: skip
COUNTERS = [name for name, _, buckets in TOKENIZER_FAMILIES if buckets is None]
COUNTERS += ["decode_passes", "prefill_passes", "prefill_compute", "prefill_cache", "decode_tokens"]
REALTIME_MODES = (
    ("prefill_compute", "prefill_compute"),
    ("prefill_cache", "prefill_cache"),
    ("decode", "decode_tokens"),
)
HTTP_ENDPOINTS_IGNORED = ("/sim/",)
IDLE_REPUBLISH_S = 30.0


@dataclass
class DecodeWindow:
    """SGLang's decode-report window (its recorder's and its log's): sums since the last report."""

    started: float = field(default_factory=time.monotonic)
    iterations: int = 0
    tokens: int = 0
    verify_steps: int = 0
    accepted: int = 0

    def add(self, report: StepReport) -> bool:
        """Add one engine step; True when it was a decode iteration."""
        decoded = report.decode_records
        if not decoded:
            return False
        self.iterations += 1
        for record in decoded:
            self.tokens += record.emitted
            if record.drafted:
                self.verify_steps += 1
                self.accepted += record.accepted
        return True

    def accept_length(self) -> float:
        return (self.accepted + self.verify_steps) / self.verify_steps if self.verify_steps else 0.0

    def accept_rate(self, num_draft_tokens: int) -> float:
        denominator = self.verify_steps * max(1, num_draft_tokens - 1)
        return self.accepted / denominator if self.verify_steps else 0.0

    def throughput(self, now: float) -> float:
        return self.tokens / max(1e-6, now - self.started)

    def reset(self, now: float) -> None:
        self.started = now
        self.tokens = self.verify_steps = self.accepted = 0


class BucketCounts:
    """A Prometheus-style histogram kept by hand (non-cumulative counts, sum, count)."""

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0.0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0.0

    def observe(self, value: float, weight: float = 1.0, amount: float | None = None) -> None:
        """Add `weight` observations of `value`; `amount` (default value × weight) goes into the sum."""
        self.counts[bisect.bisect_left(self.bounds, value)] += weight
        self.sum += value * weight if amount is None else amount
        self.count += weight

    def cumulative(self) -> list[float]:
        return list(itertools.accumulate(self.counts))


class SglangRecorder(MetricsRecorder, Collector):
    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.tokenizer_labels = {"engine_type": "unified", "model_name": config.model_name}
        self.ranks = [
            {**self.tokenizer_labels, "moe_ep_rank": "0", "pp_rank": "0", "tp_rank": str(rank)}
            for rank in range(config.tensor_parallel_size)
        ]
        self.capacity = config.kv_cache_tokens()
        self.num_draft_tokens = config.num_draft_tokens or config.k + 1
        self.counters: dict[str, float] = dict.fromkeys(COUNTERS, 0.0)
        self.hists = {name: BucketCounts(buckets) for name, _, buckets in TOKENIZER_FAMILIES if buckets}
        self.queue_time = BucketCounts(QUEUE_BUCKETS)
        self.stages = {stage: BucketCounts(STAGE_BUCKETS) for stage in ("prefill_forward", "request_process")}
        self.gauges: dict[str, float] = {name: 0.0 for name, _ in SCHEDULER_GAUGES}
        self.gauges.update(fwd_occupancy=float("nan"), new_token_ratio=0.7, kv_available_tokens=self.capacity)
        adaptive = AdaptiveSteps(config.adaptive, config.adaptive_start) if config.adaptive else None
        self._steps_in_use(config.k if adaptive is None else adaptive.steps_for(1))
        self.http: dict[tuple[str, str, str], float] = {}
        self.window = DecodeWindow()
        self.last_report = time.monotonic()
        self.pid = str(os.getpid())
        self.registry = CollectorRegistry()
        self.registry.register(self)

    # ---- engine hooks ---------------------------------------------------------------------------
    def request_scheduled(self, request: SimRequest) -> None:
        self.queue_time.observe((request.scheduled_at or request.arrival) - request.arrival)

    def step_done(self, report: StepReport) -> None:
        if report.prefilled:
            computed = sum(request.computed_prompt_tokens for request in report.prefilled)
            cached = sum(request.cached_tokens for request in report.prefilled)
            self.counters["prefill_compute"] += computed
            self.counters["prefill_cache"] += cached
            self.counters["prefill_passes"] += 1
            for request in report.prefilled:
                self.stages["prefill_forward"].observe(request.prefill_s)
                self.stages["request_process"].observe(0.0005 + request.prompt_tokens * 2e-6)
                ttft = max(0.0, (request.first_token_at or report.end) - request.arrival)
                self.hists["time_to_first_token_seconds"].observe(ttft)
            self._set_usage(report)
            self.gauges["cache_hit_rate"] = cached / (cached + computed) if cached + computed else 0.0
        for record in report.decode_records:
            # SGLang's special ITL observe: the chunk's gap goes to the sum once, its k tokens to gap/k.
            self.hists["inter_token_latency_seconds"].observe(
                record.gap_s / record.emitted, weight=record.emitted, amount=record.gap_s
            )
        if self.window.add(report):
            self.counters["decode_passes"] += 1
            self.counters["decode_tokens"] += sum(record.emitted for record in report.decode_records)
            self.gauges["new_token_ratio"] = max(0.098, self.gauges["new_token_ratio"] - 0.0005)
            if self.window.iterations % self.config.sim.decode_log_interval == 0:
                self._decode_report(report)

    def _decode_report(self, report: StepReport) -> None:
        now = report.end
        self.gauges["gen_throughput"] = self.window.throughput(now)
        if self.config.k:
            if self.config.adaptive is not None and report.decode_records:
                self._steps_in_use(report.decode_records[-1].drafted)
            draft_tokens = int(self.gauges["spec_num_draft_tokens"])
            self.gauges["spec_accept_length"] = self.window.accept_length()
            self.gauges["spec_accept_rate"] = self.window.accept_rate(draft_tokens)
        self.gauges["cache_hit_rate"] = 0.0
        self._set_usage(report)
        self.window.reset(now)
        self.last_report = now

    def _steps_in_use(self, steps: int) -> None:
        """The gauges of the steps in use, which move under --speculative-adaptive (a tier of n steps
        verifies n + 1 tokens: topk 1); 0 with speculation off."""
        draft_tokens = steps + 1 if self.config.adaptive else self.num_draft_tokens
        self.gauges.update(
            spec_num_steps=float(steps), spec_num_draft_tokens=float(draft_tokens if steps else 0)
        )

    def _set_usage(self, report: StepReport) -> None:
        used = float(report.kv_used_tokens)
        usage = used / self.capacity
        self.gauges.update(
            num_running_reqs=report.running,
            num_queue_reqs=report.waiting,
            decode_sum_seq_lens=used,
            token_usage=round(usage, 2),
            full_token_usage=usage,
            num_used_tokens=used,
            kv_used_tokens=used,
            kv_available_tokens=self.capacity - used,
            kv_evictable_tokens=0.0,
        )

    def idle_tick(self, now: float, running: int, waiting: int) -> None:
        # SGLang re-publishes every ~30 s when idle: gen_throughput drops to 0, the spec gauges stay stale.
        if running == 0 and now - self.last_report >= IDLE_REPUBLISH_S:
            self.gauges.update(gen_throughput=0.0, num_running_reqs=0, num_queue_reqs=waiting)
            self.last_report = now

    def load_changed(self, running: int, waiting: int, kv_used_tokens: int, kv_capacity_tokens: int) -> None:
        self.gauges.update(num_running_reqs=running, num_queue_reqs=waiting)

    def request_finished(self, request: SimRequest) -> None:
        if request.first_token_at is None or request.finished_at is None:
            return
        self.counters["prompt_tokens"] += request.prompt_tokens
        self.counters["generation_tokens"] += request.generated
        self.counters["spec_verify_calls"] += request.verify_steps
        self.counters["cached_tokens"] += request.cached_tokens
        self.counters["num_requests"] += 1
        self.hists["prompt_tokens_histogram"].observe(request.prompt_tokens)
        self.hists["uncached_prompt_tokens_histogram"].observe(request.computed_prompt_tokens)
        self.hists["generation_tokens_histogram"].observe(request.generated)
        self.hists["e2e_request_latency_seconds"].observe(request.finished_at - request.arrival)

    def http_request(
        self, method: str, path: str, status: int, request_bytes: int, response_bytes: int, duration_s: float
    ) -> None:
        if path.startswith(HTTP_ENDPOINTS_IGNORED):
            return
        self.http[(path, method, "")] = self.http.get((path, method, ""), 0.0) + 1
        self.http[(path, method, str(status))] = self.http.get((path, method, str(status)), 0.0) + 1

    # ---- exposition -----------------------------------------------------------------------------
    def render(self) -> bytes:
        return generate_latest(self.registry)

    def collect(self) -> Iterator[Metric]:
        tok = self.tokenizer_labels
        for name, documentation, buckets in TOKENIZER_FAMILIES:
            if buckets:
                yield _histogram(name, documentation, [(tok, self.hists[name])])
            else:
                labels = {"cache_source": "device", **tok} if name == "cached_tokens" else tok
                yield _counter(name, documentation, [(labels, self.counters[name])])
        cpu = time.process_time()
        yield _counter(
            "process_cpu_seconds",
            "Total CPU time consumed by this process (user + system)",
            [({"component": "tokenizer"}, cpu * 0.75), ({"component": "detokenizer"}, cpu * 0.25)],
        )
        yield from self._http_families()
        yield from self._scheduler_families()

    def _http_families(self) -> Iterator[Metric]:
        requests = [({"endpoint": e, "method": m}, v) for (e, m, s), v in self.http.items() if not s]
        responses = [
            ({"endpoint": e, "method": m, "status_code": s}, v) for (e, m, s), v in self.http.items() if s
        ]
        active = [(labels, 1.0 if labels["endpoint"] == "/metrics" else 0.0) for labels, _ in requests]
        yield _counter("http_requests", "Total number of HTTP requests by endpoint and method", requests)
        yield _counter(
            "http_responses", "Total number of HTTP responses by endpoint and status code", responses
        )
        yield _gauge("http_requests_active", "Number of currently active HTTP requests", active)
        yield _gauge("routing_keys_active", "Number of unique routing keys with active requests", [({}, 0.0)])

    def _scheduler_families(self) -> Iterator[Metric]:
        rank0 = self.ranks[0]
        for name, documentation in SCHEDULER_GAUGES:
            labels = (
                {**rank0, "pid": self.pid} if name in ("num_retracted_reqs", "num_paused_reqs") else rank0
            )
            yield _gauge(name, documentation, [(labels, self.gauges[name])])
            if name == "num_unique_running_routing_keys":
                ranges = [
                    ({**rank0, "gt": gt, "le": le}, 0.0) for gt, le in itertools.pairwise(ROUTING_BOUNDS)
                ]
                for routing, what in (("running", "running"), ("all", "running+waiting")):
                    doc = f"Distribution of routing keys by {what} request count (gt < count <= le)."
                    yield _gauge(f"routing_key_{routing}_req_count", doc, ranges)
        passes = [
            ({**rank, "mode": "decode_cuda_graph"}, self.counters["decode_passes"]) for rank in self.ranks
        ]
        passes.append(({**rank0, "mode": "prefill_none"}, self.counters["prefill_passes"]))
        yield _counter(
            "cuda_graph_passes", "Total number of forward passes categorized by CUDA graph.", passes
        )
        yield _counter(
            "realtime_tokens",
            "Total number of tokens processed (updated on each log interval). mode: prefill_compute, "
            "prefill_cache, decode.",
            [({**rank0, "mode": mode}, self.counters[name]) for mode, name in REALTIME_MODES],
        )
        yield _histogram(
            "queue_time_seconds",
            "Histogram of queueing time in seconds.",
            [(rank, self.queue_time) for rank in self.ranks],
        )
        yield _histogram(
            "per_stage_req_latency_seconds",
            "The latency of each stage of requests.",
            [({**rank, "stage": stage}, hist) for rank in self.ranks for stage, hist in self.stages.items()],
        )
        constants = {
            "max_total_num_tokens": float(self.capacity),
            "engine_startup_time": 0.0,
            "engine_load_weights_time": 0.0,
            "page_size": float(self.config.block_size),
            "num_pages": float(self.capacity // self.config.block_size),
            "context_len": float(self.config.max_model_len),
            "startup_available_gpu_memory_gb": round(84.0 * (1.0 - self.config.gpu_memory_utilization), 2),
        }
        for name, documentation in CONSTANTS:
            yield _gauge(name, documentation, [(rank, constants[name]) for rank in self.ranks])


def _family(kind: str, name: str, documentation: str, samples: list[tuple[dict[str, str], float]]) -> Metric:
    metric = Metric(f"sglang:{name}", documentation, kind)
    for labels, value in samples:
        metric.add_sample(f"sglang:{name}{'_total' if kind == 'counter' else ''}", labels, value)
    return metric


_counter = partial(_family, "counter")
_gauge = partial(_family, "gauge")


def _histogram(name: str, documentation: str, series: list[tuple[dict[str, str], BucketCounts]]) -> Metric:
    metric = Metric(f"sglang:{name}", documentation, "histogram")
    for labels, hist in series:
        metric.add_sample(f"sglang:{name}_sum", labels, hist.sum)
        for bound, total in zip([*hist.bounds, float("inf")], hist.cumulative(), strict=True):
            le = floatToGoString(bound)
            metric.add_sample(f"sglang:{name}_bucket", {**labels, "le": le}, total)
        metric.add_sample(f"sglang:{name}_count", labels, hist.count)
    return metric
