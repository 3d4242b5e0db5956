"""ScrapeWindow under real conditions: NaN or missing series, new series, duplicates, quantile bounds."""

from __future__ import annotations

import json

import httpx
import pytest
from metrics_test_server import (
    VLLM_LABELS,
    Reply,
    ReplyServer,
    sample_body,
    scrape,
    sglang_ttft_page,
    spectop,
    vllm_page,
    window_figures,
)

from tui.settings import EndpointSettings
from tui.telemetry.figures import Figures
from tui.telemetry.monitor import EndpointMonitor
from tui.telemetry.reading import EndpointReading
from tui.telemetry.window import ScrapeWindow

LIFETIME = 10_000_000.0


def steady(second: int) -> tuple[float, float, float]:
    """100 tok/s, 10 drafts/s (20 draft tokens/s), 12 accepted/s on lifetime counters near 10 M."""
    return LIFETIME + 100.0 * second, LIFETIME + 10.0 * second, LIFETIME + 12.0 * second


def _never_wrong(figures: Figures) -> None:
    true = {"generation_tokens_per_s": 100.0, "acceptance_rate": 0.6, "mean_acceptance_length": 2.2}
    for name, value in true.items():
        assert getattr(figures, name) in (None, pytest.approx(value)), figures


@pytest.mark.parametrize("gap", ["NaN", "missing"])
def test_one_nan_or_missing_series_does_not_inflate_the_window(gap: str) -> None:
    window = ScrapeWindow(window_s=60.0)
    for second in range(10):
        text = vllm_page(*steady(second))
        if second == 5:  # every counter NaN in one scrape, or one series missing from one page
            text = vllm_page("NaN", "NaN", "NaN") if gap == "NaN" else vllm_page(None, *steady(second)[1:])
        window.add(scrape(text, float(second)))
        _never_wrong(window.figures())
    f = window.figures()
    assert f.generation_tokens_per_s == pytest.approx(100.0)
    assert f.acceptance_rate == pytest.approx(12 / 20)
    assert f.mean_acceptance_length == pytest.approx(1 + 12 / 10)


async def _readings(pages: list[str], monkeypatch: pytest.MonkeyPatch) -> list[EndpointReading]:
    """One monitor poll per page, one second apart (the scraper's clock)."""
    readings = []
    async with ReplyServer([Reply(text.encode()) for text in pages]) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="gpu", url=server.url), window_s=60.0)
        for second in range(len(pages)):
            monkeypatch.setattr("tui.telemetry.scraper.time.monotonic", lambda at=100.0 + second: at)
            readings.append(await monitor.poll(client))
    return readings


def test_a_new_series_is_a_baseline_not_an_increase() -> None:
    # A second engine's lifetime counter shows up (e.g. a proxy now reaches it): not 5 M tokens in 1 s.
    window = ScrapeWindow(window_s=60.0)
    other = 'vllm:generation_tokens_total{engine="1",model_name="m"} '
    for second in range(6):
        extra = f"{other}{5e6 + 50 * second}\n" if second >= 3 else ""
        window.add(
            scrape(vllm_page(1000.0 + 100 * second, 10.0 * second, 12.0 * second, extra), float(second))
        )
    # 100 tok/s all along, plus engine 1's 50 tok/s over its two segments.
    assert window.figures().generation_tokens_per_s == pytest.approx((500 + 100) / 5)
    assert not window.figures().restarted_in_window


def test_llamacpp_per_position_family_appearing_counts_from_zero() -> None:
    base = "llamacpp:spec_decode_num_drafts_total {d}\nllamacpp:spec_decode_num_accepted_tokens_total {a}\n"
    family = 'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {v}\n'
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(base.format(d=0, a=0), 0.0))
    text = base.format(d=10, a=15) + family.format(i=0, v=9) + family.format(i=1, v=6)
    window.add(scrape(text, 1.0))
    assert window.figures().per_position_acceptance == pytest.approx([0.9, 0.6])


def test_draft_positions_changing_without_a_visible_restart_start_afresh() -> None:
    def page(drafts: float, positions: list[float]) -> str:
        return vllm_page(drafts * 3, drafts, sum(positions), k=len(positions), positions=positions)

    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(1000, [880, 650]), 0.0))
    window.add(scrape(page(1100, [968, 715]), 10.0))
    window.add(scrape(page(1200, [1056, 780, 10, 5]), 20.0))  # k 2 → 4
    assert window.figures().per_position_acceptance is None
    assert "draft positions changed (k 2 → 4)" in window.figures().notes["per_position_acceptance"]
    window.add(scrape(page(1300, [1144, 845, 70, 25]), 30.0))
    assert window.figures().per_position_acceptance == pytest.approx([0.88, 0.65, 0.60, 0.20])
    figures = window.figures()
    assert figures.covered_s == pytest.approx(10.0)
    # The card is told the window is still short.
    assert figures.window_short and "window still short: 10 s of 1 min" in figures.notes["window"]


async def test_duplicate_series_make_the_page_inconsistent() -> None:
    # A proxy concatenating two copies of one page: "KV cache 250%", "running 27" before.
    page = sample_body("vllm", "metrics_t1.txt")
    replies = [Reply(sample_body("vllm", "metrics_t0.txt")), Reply(page + page)]
    async with ReplyServer(replies) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="gpu", url=server.url), window_s=60.0)
        await monitor.poll(client)
        reading = await monitor.poll(client)
    assert reading.up and reading.error is not None
    assert reading.error.startswith("inconsistent page: the series vllm:")
    assert "more than once" in reading.error
    figures = reading.figures
    assert (figures.kv_cache_usage, figures.running, figures.generation_tokens_per_s) == (None, None, None)
    assert figures.notes["window"] == reading.error


def test_duplicate_gauge_line_alone_is_found() -> None:
    text = vllm_page(10.0, 1.0, 1.0) + f"vllm:kv_cache_usage_perc{{{VLLM_LABELS}}} 0.5\n" * 2
    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(text, 0.0))
    assert window.inconsistent is not None and "vllm:kv_cache_usage_perc" in window.inconsistent
    assert window.figures().kv_cache_usage is None


def test_quantile_bounds_first_bucket_narrow_bucket_and_inf_bucket() -> None:
    empty = scrape(sglang_ttft_page([0] * 8, 0.0), 0.0)
    # Every TTFT fell in the first bucket (≤ 100 ms) with a mean of 6.5 ms: p50 "50 ms" says nothing.
    f = window_figures(empty, scrape(sglang_ttft_page([40] * 8, 40 * 0.0065), 10.0))
    assert f.ttft_mean_s == pytest.approx(0.0065)
    assert f.quantile_bounds["ttft_p50_s"] == f.quantile_bounds["ttft_p95_s"] == (0.0, 0.1)
    assert "first bucket" in f.notes["ttft_p50_s"]
    # In a narrow bucket: no bound; in the +Inf bucket: a lower bound.
    f = window_figures(empty, scrape(sglang_ttft_page([0, 0, 0, 0, 10, 10, 10, 20], 30.0), 10.0))
    assert f.ttft_p50_s == pytest.approx(0.8)
    assert "ttft_p50_s" not in f.quantile_bounds
    assert f.ttft_p95_s == pytest.approx(2.0) and f.quantile_bounds["ttft_p95_s"] == (2.0, None)
    assert Figures.model_validate_json(f.model_dump_json()) == f  # recordings and JSON keep the bound


def test_one_series_reset_alone_counts_from_zero_without_restarting_the_window() -> None:
    # Engine 1 of two restarts on its own (data parallel): engine 0's history stays.
    def page(zero: float, one: float) -> str:
        return (
            f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {zero}\n'
            f'vllm:generation_tokens_total{{engine="1",model_name="m"}} {one}\n'
            f'vllm:request_success_total{{engine="0",model_name="m"}} {zero / 100}\n'
            f'vllm:request_success_total{{engine="1",model_name="m"}} 7\n'
        )

    window = ScrapeWindow(window_s=60.0)
    window.add(scrape(page(1e6, 5e5), 0.0))
    window.add(scrape(page(1e6 + 1000, 5e5 + 500), 10.0))
    window.add(scrape(page(1e6 + 2000, 200), 20.0))  # engine 1 reset: 200 tokens since
    # One page with one counter lower is not believed yet (it could be one garbled line)...
    assert window.dropped_pages == 1
    assert window.figures().generation_tokens_per_s == pytest.approx((1000 + 500) / 10)
    window.add(scrape(page(1e6 + 3000, 300), 30.0))  # ...lower again on the next: reset alone
    f = window.figures()
    assert f.generation_tokens_per_s == pytest.approx((1000 + 500 + 2000 + 300) / 30)
    assert not f.restarted_in_window and f.covered_s == pytest.approx(30.0)


@pytest.mark.parametrize("gap", ["generated", "accepted"])
async def test_a_nan_in_the_newest_scrape_does_not_pull_the_figures_down(
    gap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nine good scrapes, then one where a counter is NaN: over the nine seconds that counter's increase
    # is known for eight only.
    pages = [vllm_page(*steady(second)) for second in range(9)]
    generated, drafts, accepted = steady(9)
    pages.append(
        vllm_page("NaN", drafts, accepted) if gap == "generated" else vllm_page(generated, drafts, "NaN")
    )
    pages.append(vllm_page(*steady(10)))  # back: the increase over the gap counts in full
    readings = await _readings(pages, monkeypatch)
    during, after = readings[-2].figures, readings[-1].figures
    assert during.generation_tokens_per_s == pytest.approx(100.0)
    assert during.acceptance_rate == pytest.approx(12 / 20)
    assert during.mean_acceptance_length == pytest.approx(1 + 12 / 10)
    assert "not in the newer readings (missing or NaN)" in during.notes["window"]
    assert after.generation_tokens_per_s == pytest.approx(100.0)
    assert after.acceptance_rate == pytest.approx(12 / 20)
    assert "window" not in after.notes or "missing" not in after.notes["window"]


@pytest.mark.parametrize("which", ["first", "last"])
async def test_a_nan_counter_is_unknown_with_why_and_the_dashboard_agrees_with_the_snapshot(
    which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = vllm_page("NaN", "NaN", "NaN") if which == "first" else vllm_page("NaN", *steady(1)[1:])
    pages = [bad, vllm_page(*steady(1))] if which == "first" else [vllm_page(*steady(0)), bad]
    async with ReplyServer([Reply(text.encode()) for text in pages]) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "0.3", "--json")
    assert code == 0, err
    snapshot = json.loads(out)
    assert snapshot["generation_tokens_per_s"] is None  # never 10 M tokens in 0.3 s
    if which == "first":
        assert snapshot["acceptance_rate"] is None and snapshot["mean_acceptance_length"] is None
        assert "first seen in the newest reading" in snapshot["notes"]["window"]
    else:
        assert snapshot["acceptance_rate"] == pytest.approx(0.6)
        assert "not in the newest reading (missing or NaN)" in snapshot["notes"]["window"]
    assert "generation_tokens" in snapshot["notes"]["window"]
    dashboard = (await _readings(pages, monkeypatch))[-1].figures.model_dump()
    for name in ("generation_tokens_per_s", "acceptance_rate", "mean_acceptance_length", "running"):
        assert (dashboard[name] is None) == (snapshot[name] is None), name
    assert dashboard["acceptance_rate"] == snapshot["acceptance_rate"]
    # The dashboard's window is 60 s, so it also says the window is short; the reason is the same.
    assert snapshot["notes"]["window"] in dashboard["notes"]["window"]


def test_a_series_gone_for_good_never_freezes_the_figures() -> None:
    # Engine 1's counter stops being printed from second 5 on: the figures leave out at most the two
    # newest readings, so they never describe a moment further in the past than that.
    window = ScrapeWindow(window_s=60.0)
    for second in range(12):
        text = vllm_page(*steady(second))
        if second < 5:
            text += f'vllm:generation_tokens_total{{engine="1",model_name="m"}} {5e6 + 50 * second}\n'
        window.add(scrape(text, float(second)))
        figures = window.figures()
        if second >= 5:
            assert "figures end at the reading 2 s ago" in figures.notes["window"] or second == 5
            assert figures.acceptance_rate == pytest.approx(0.6)
    assert window.covered_s == pytest.approx(9.0)
