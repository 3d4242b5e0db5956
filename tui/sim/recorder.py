"""What every flavour's metrics recorder provides: engine hooks, HTTP accounting and the /metrics page."""

from __future__ import annotations

from tui.sim.engine import EngineObserver


class MetricsRecorder(EngineObserver):
    """Base class; one subclass per server flavour (`metrics_vllm`, `metrics_sglang`, `metrics_llamacpp`)."""

    content_type = "text/plain; version=0.0.4; charset=utf-8"

    def render(self) -> bytes:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        return {}

    def idle_tick(self, now: float, running: int, waiting: int) -> None:
        """Called about once a second, for servers that re-publish gauges while idle."""
        return None

    def http_request(
        self, method: str, path: str, status: int, request_bytes: int, response_bytes: int, duration_s: float
    ) -> None:
        return None


def one_two_five_buckets(maximum: int) -> list[float]:
    """vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to `maximum`."""
    buckets: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > maximum:
                return buckets
            buckets.append(float(value))
        exponent += 1
