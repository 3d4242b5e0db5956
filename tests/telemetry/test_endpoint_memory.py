"""What one endpoint remembers between pages (`SeriesMemo`, by series text), reset for a new server."""

from __future__ import annotations

import pytest
from metrics_test_server import sample_body

from tui.telemetry.backends import base, detect_backend, sglang, vllm
from tui.telemetry.backends.base import SeriesMemo
from tui.telemetry.prometheus import MetricsParser, Sample, parse_metrics_text
from tui.telemetry.scraper import Scrape
from tui.telemetry.window import ScrapeWindow


def _page(backend: str, name: str = "metrics_t0.txt") -> tuple[Sample, ...]:
    return tuple(MetricsParser().parse(sample_body(backend, name).decode()))


def test_a_reading_is_the_same_with_and_without_a_memo_and_a_new_server_starts_it_over() -> None:
    for module, backend in ((vllm, "vllm"), (sglang, "sglang")):
        memo = SeriesMemo()
        for name in ("metrics_t0.txt", "metrics_t1.txt", "metrics_t0.txt"):
            samples = _page(backend, name)
            assert module.extract(samples, memo) == module.extract(samples)
    # another server behind the URL (SGLang after vLLM) starts the memo over
    assert memo.plans(sglang.TABLE) and memo.plans(vllm.TABLE) == {}


def test_each_window_keeps_its_own_memo() -> None:
    vllm_window, sglang_window = ScrapeWindow(60.0), ScrapeWindow(60.0)
    vllm_window.add(Scrape(0.0, 0.0, _page("vllm"), None, "vllm"))
    sglang_window.add(Scrape(0.0, 0.0, _page("sglang"), None, "sglang"))
    vllm_series = {sample.series for sample in _page("vllm")}
    sglang_series = {sample.series for sample in _page("sglang")}
    vllm_plans = vllm_window._memo.plans(vllm.TABLE)
    sglang_plans = sglang_window._memo.plans(sglang.TABLE)
    assert vllm_plans and set(vllm_plans) <= vllm_series
    assert sglang_plans and set(sglang_plans) <= sglang_series
    assert sglang_window._memo.identities and set(sglang_window._memo.identities) <= sglang_series
    assert not vllm_window._memo.identities  # vLLM merges no ranks
    # No process-global, id()-keyed caches left to share between endpoints.
    assert not hasattr(base, "_PLANS") and not hasattr(sglang, "_IDENTITIES")


def test_the_memo_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_MEMO_MAX", 50)
    memo = SeriesMemo()
    page = _page("sglang")
    for _ in range(3):
        assert sglang.extract(page, memo) == sglang.extract(page)
        assert 50 <= len(memo._plans) <= len(page)  # this page's series only: cleared before it
    assert memo.plans(sglang.TABLE) == {}  # full: cleared before the next page, never grown without bound


def test_the_backend_is_the_one_most_metric_names_belong_to() -> None:
    pages = [_page("vllm"), _page("sglang"), (), _page("llamacpp")]
    assert [detect_backend(samples) for samples in pages] == ["vllm", "sglang", None, "llamacpp"]
    mostly_vllm = "vllm:a_total 1\nvllm:b_total 2\nsglang:c_total 3\n"
    assert detect_backend(tuple(parse_metrics_text(mostly_vllm))) == "vllm"
