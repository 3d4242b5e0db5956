"""Parse + derive the vLLM and SGLang sample pages, next to prometheus_client's full parse.
`[--runs N]`; target < 2 ms per vLLM page."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tui.telemetry.backends import detect_backend
from tui.telemetry.backends.base import SeriesMemo
from tui.telemetry.prometheus import MetricsParser, parse_metrics_text
from tui.telemetry.scraper import Scrape
from tui.telemetry.window import ScrapeWindow, figures_between

SAMPLES = Path(__file__).resolve().parents[1] / "telemetry" / "metrics_samples"
FALLBACK_SAMPLES = Path("/work/shared/reference/samples")


def _page(backend: str, name: str) -> str:
    for root in (SAMPLES, FALLBACK_SAMPLES):
        path = root / backend / name
        if path.is_file():
            return path.read_bytes().decode()
    raise SystemExit(f"sample page {backend}/{name} not found")


def _time_ms(function: Callable[[], object], runs: int) -> tuple[float, float]:
    """(mean, median) milliseconds per call over `runs` calls, after a warm-up."""
    for _ in range(min(20, runs)):
        function()
    durations = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        durations.append((time.perf_counter() - start) * 1000)
    return statistics.fmean(durations), statistics.median(durations)


def _derive(
    text: str, first: Scrape, parser: MetricsParser | None, memo: SeriesMemo | None, all_new: bool = False
) -> object:
    """Parse a page and derive the figures since `first` (a new parser and memo when None)."""
    parser = parser or MetricsParser()
    if all_new:
        parser._lines.clear()
    samples = tuple(parser.parse(text))
    last = Scrape(10.0, 10.0, samples, None, detect_backend(samples))
    return figures_between(first, last, memo=memo or SeriesMemo())


def _prometheus_client_parse(text: str) -> object:
    return [family.samples for family in text_string_to_metric_families(text)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()

    rows = []
    for backend in ("vllm", "sglang", "llamacpp"):
        first_text, last_text = _page(backend, "metrics_t0.txt"), _page(backend, "metrics_t1.txt")
        first_samples = tuple(parse_metrics_text(first_text))
        first = Scrape(0.0, 0.0, first_samples, None, detect_backend(first_samples))
        body = last_text.split("\r\n\r\n", 1)[1] if last_text.startswith("HTTP/") else last_text
        # A live endpoint's state, as its monitor keeps it: its parser and its window's series memo.
        parser, memo = MetricsParser(), SeriesMemo()
        cases = {
            "spectop parse": partial(parser.parse, last_text),
            "spectop parse + derive": partial(_derive, last_text, first, parser, memo),
            # Every value moved since the last scrape; label sets repeat, as on a live server.
            "spectop parse + derive, all values new": partial(_derive, last_text, first, parser, memo, True),
            # The first scrape of a server: nothing cached.
            "spectop parse + derive, first scrape": partial(_derive, last_text, first, None, None),
            "prometheus_client parse": partial(_prometheus_client_parse, body),
        }
        samples = len(parse_metrics_text(last_text))
        rows += [(backend, samples, what, *_time_ms(function, args.runs)) for what, function in cases.items()]

    # A 60 s window polled every 2 s: the cost of one dashboard refresh (add + figures).
    vllm_text = _page("vllm", "metrics_t1.txt")
    window = ScrapeWindow(window_s=60.0)
    vllm_samples = tuple(parse_metrics_text(vllm_text))
    clock = [0.0]

    def window_tick() -> object:
        clock[0] += 2.0
        window.add(Scrape(clock[0], clock[0], vllm_samples, None, "vllm"))
        return window.figures()

    rows.append(
        ("vllm", len(vllm_samples), "window add + figures (30 scrapes)", *_time_ms(window_tick, args.runs))
    )

    print(f"metrics parse benchmark, {args.runs} runs each (milliseconds per page)")
    print(f"{'page':<9} {'samples':>7}  {'what':<40} {'mean':>8} {'median':>8}")
    for backend, count, what, mean_ms, median_ms in rows:
        print(f"{backend:<9} {count:>7}  {what:<40} {mean_ms:>8.3f} {median_ms:>8.3f}")
    vllm = {what: mean_ms for backend, _, what, mean_ms, _ in rows if backend == "vllm"}
    speedup = vllm["prometheus_client parse"] / vllm["spectop parse + derive"]
    verdict = "meets" if vllm["spectop parse + derive"] < 2.0 else "MISSES"
    print(
        f"vLLM page: parse + derive {vllm['spectop parse + derive']:.3f} ms ({verdict} the 2 ms target), "
        f"{speedup:.1f}x faster than prometheus_client's parse alone"
    )


if __name__ == "__main__":
    main()
