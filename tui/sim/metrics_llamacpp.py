"""llama.cpp's /metrics rendered by hand as the real server does: C++ doubles, counters moved at a request's
end, and rate gauges over the window since the previous scrape."""

from __future__ import annotations

import time

from tui.sim.config import SimConfig
from tui.sim.engine import MetricsRecorder, SimRequest, StepReport

COUNTERS = (
    ("prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens"),
    ("prompt_tokens_cached_total", "Number of prompt tokens reused from the cache"),
    ("prompt_seconds_total", "Total time spent processing prompts"),
    ("tokens_predicted_total", "Number of generation tokens processed"),
    ("tokens_predicted_seconds_total", "Total time spent generating tokens"),
    ("n_decode_total",
     "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding"),
    ("n_tokens_max", "Largest observed sequence length (prompt + generation)"),
    ("spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated"),
    ("spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model"),
    ("spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps"),
)  # fmt: skip
GAUGES = (
    ("prompt_tokens_seconds", "Average prompt throughput in tokens/s"),
    ("predicted_tokens_seconds", "Average generation throughput in tokens/s"),
    ("requests_processing", "Number of requests processing"),
    ("requests_deferred", "Number of requests deferred"),
    ("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call"),
)


class LlamacppRecorder(MetricsRecorder):
    content_type = "text/plain; version=0.0.4"

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.values: dict[str, float] = {name: 0.0 for name, _ in COUNTERS}
        self.per_pos = [0] * config.k
        self.per_pos_visible = False
        self.busy_slots = 0
        self.running = self.waiting = 0
        self.start_us = int(time.monotonic() * 1e6)
        self._window_prompt = [0.0, 0.0]  # tokens, seconds since the last scrape
        self._window_predicted = [0.0, 0.0]

    def request_scheduled(self, request: SimRequest) -> None:
        self.values["prompt_tokens_cached_total"] += request.cached_tokens

    def step_done(self, report: StepReport) -> None:
        if report.prefilled:
            computed = sum(request.computed_prompt_tokens for request in report.prefilled)
            seconds = max(request.prefill_s for request in report.prefilled)
            self.values["prompt_tokens_total"] += computed
            self.values["prompt_seconds_total"] += seconds
            self._window_prompt[0] += computed
            self._window_prompt[1] += seconds
        self.values["n_decode_total"] += 1
        self.busy_slots += report.running
        lengths = [record.request.prompt_tokens + record.request.generated for record in report.records]
        self.values["n_tokens_max"] = max([self.values["n_tokens_max"], *lengths])
        self.running, self.waiting = report.running, report.waiting

    def load_changed(self, running: int, waiting: int, kv_used_tokens: int, kv_capacity_tokens: int) -> None:
        self.running, self.waiting = running, waiting

    def request_finished(self, request: SimRequest) -> None:
        if request.first_token_at is None or request.finished_at is None:
            return
        gen_s = request.finished_at - request.first_token_at
        self.values["tokens_predicted_total"] += request.generated
        self.values["tokens_predicted_seconds_total"] += gen_s
        self._window_predicted[0] += max(0, request.generated - 1)
        self._window_predicted[1] += gen_s
        if request.verify_steps:
            self.values["spec_decode_num_draft_tokens_total"] += request.drafted
            self.values["spec_decode_num_accepted_tokens_total"] += request.accepted
            self.values["spec_decode_num_drafts_total"] += request.verify_steps
            for position, count in enumerate(request.accepted_per_pos):
                self.per_pos[position] += count
            self.per_pos_visible = True

    def headers(self) -> dict[str, str]:
        return {"Process-Start-Time-Unix": str(self.start_us), "Server": "llama.cpp"}

    def render(self) -> bytes:
        prompt_tokens, prompt_s = self._window_prompt
        predicted, predicted_s = self._window_predicted
        decodes = self.values["n_decode_total"]
        gauges = {
            "prompt_tokens_seconds": prompt_tokens / prompt_s if prompt_s else 0.0,
            "predicted_tokens_seconds": predicted / predicted_s if predicted_s else 0.0,
            "requests_processing": float(self.running),
            "requests_deferred": float(self.waiting),
            "n_busy_slots_per_decode": self.busy_slots / decodes if decodes else 0.0,
        }
        self._window_prompt, self._window_predicted = [0.0, 0.0], [0.0, 0.0]
        lines: list[str] = []
        for table, kind, values in ((COUNTERS, "counter", self.values), (GAUGES, "gauge", gauges)):
            for name, documentation in table:
                lines += [
                    f"# HELP llamacpp:{name} {documentation}",
                    f"# TYPE llamacpp:{name} {kind}",
                    f"llamacpp:{name} {values[name]:g}",  # as `std::stringstream << double`
                ]
        if self.per_pos_visible:
            name = "spec_decode_num_accepted_tokens_per_pos_total"
            lines += [
                f"# HELP llamacpp:{name} Accepted tokens per draft position",
                f"# TYPE llamacpp:{name} counter",
            ]
            lines += [f'llamacpp:{name}{{position="{i}"}} {count}' for i, count in enumerate(self.per_pos)]
        return ("\n".join(lines) + "\n").encode()
