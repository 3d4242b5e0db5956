"""On the dashboard's path (EndpointMonitor over real sockets) and through `spectop snapshot`:
a series NaN or missing in one scrape never gives a wrong figure, and where the figure cannot be known it
is None with the reason in `notes`."""

from __future__ import annotations

import json

import httpx
import pytest
from metrics_test_server import Reply, ReplyServer
from test_snapshot_cli import spectop
from test_window_real_conditions import scrape

from tui.settings import EndpointSettings
from tui.telemetry.monitor import EndpointMonitor
from tui.telemetry.window import ScrapeWindow

LABELS = 'engine="0",model_name="m"'
LIFETIME = 10_000_000.0  # a lifetime counter of 10 M


def page(generated: float | str, drafts: float | str, accepted: float | str) -> bytes:
    draft_tokens = drafts if isinstance(drafts, str) else 2 * drafts
    return (
        f"vllm:generation_tokens_total{{{LABELS}}} {generated}\n"
        f"vllm:spec_decode_num_drafts_total{{{LABELS}}} {drafts}\n"
        f"vllm:spec_decode_num_draft_tokens_total{{{LABELS}}} {draft_tokens}\n"
        f"vllm:spec_decode_num_accepted_tokens_total{{{LABELS}}} {accepted}\n"
        f"vllm:num_requests_running{{{LABELS}}} 3\n"
    ).encode()


def steady(second: int) -> tuple[float, float, float]:
    """100 tok/s, 10 drafts/s (20 draft tokens/s), 12 accepted/s on lifetime counters near 10 M."""
    return LIFETIME + 100.0 * second, LIFETIME + 10.0 * second, LIFETIME + 12.0 * second


async def _readings(pages: list[bytes], monkeypatch: pytest.MonkeyPatch) -> list:
    """One monitor poll per page, one second apart (the scraper's clock)."""
    readings = []
    async with ReplyServer([Reply(body) for body in pages]) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="gpu", url=server.url), window_s=60.0)
        for second in range(len(pages)):
            monkeypatch.setattr("tui.telemetry.scraper.time.monotonic", lambda at=100.0 + second: at)
            readings.append(await monitor.poll(client))
    return readings


@pytest.mark.parametrize("gap", ["generated", "accepted"])
async def test_a_nan_in_the_newest_scrape_does_not_pull_the_figures_down(
    gap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nine good scrapes, then one where a counter is NaN: over the nine seconds that counter's increase
    # is known for eight only. Before: 88.9 tok/s (or acceptance 0.53) against a true 100 (0.60).
    pages = [page(*steady(second)) for second in range(9)]
    generated, drafts, accepted = steady(9)
    pages.append(page("NaN", drafts, accepted) if gap == "generated" else page(generated, drafts, "NaN"))
    pages.append(page(*steady(10)))  # back: the increase over the gap counts in full
    readings = await _readings(pages, monkeypatch)
    during, after = readings[-2].figures, readings[-1].figures
    assert during.generation_tokens_per_s == pytest.approx(100.0)
    assert during.acceptance_rate == pytest.approx(12 / 20)
    assert during.mean_acceptance_length == pytest.approx(1 + 12 / 10)
    assert "not in the newer readings (missing or NaN)" in during.notes["window"]
    assert after.generation_tokens_per_s == pytest.approx(100.0)
    assert after.acceptance_rate == pytest.approx(12 / 20)
    assert "window" not in after.notes or "missing" not in after.notes["window"]


async def test_a_nan_in_one_scrape_mid_window_never_inflates_the_dashboard(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Once shown: 1,111,255 tok/s against a true 100, acceptance 47.25, mean length 95.5.
    pages = [page(*steady(second)) for second in range(10)]
    pages[5] = page("NaN", "NaN", "NaN")
    for reading in await _readings(pages, monkeypatch):
        figures = reading.figures
        for value, true in (
            (figures.generation_tokens_per_s, 100.0),
            (figures.acceptance_rate, 0.6),
            (figures.mean_acceptance_length, 2.2),
        ):
            assert value is None or value == pytest.approx(true), figures


@pytest.mark.parametrize("which", ["first", "last"])
async def test_snapshot_with_a_nan_counter_says_why_the_figure_is_unknown(which: str) -> None:
    good = [page(*steady(0)), page(*steady(1))]
    bad = page("NaN", "NaN", "NaN") if which == "first" else page("NaN", *steady(1)[1:])
    pages = [bad, good[1]] if which == "first" else [good[0], bad]
    async with ReplyServer([Reply(body) for body in pages]) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "0.3", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["generation_tokens_per_s"] is None  # never 10 M tokens in 0.3 s
    if which == "first":
        assert record["acceptance_rate"] is None and record["mean_acceptance_length"] is None
        assert "first seen in the newest reading" in record["notes"]["window"]
    else:
        assert record["acceptance_rate"] == pytest.approx(0.6)
        assert "not in the newest reading (missing or NaN)" in record["notes"]["window"]
    assert "generation_tokens" in record["notes"]["window"]


@pytest.mark.parametrize("which", ["first", "last"])
async def test_the_dashboard_and_the_snapshot_agree_on_what_is_unknown_and_why(
    which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = page("NaN", "NaN", "NaN") if which == "first" else page("NaN", *steady(1)[1:])
    pages = [bad, page(*steady(1))] if which == "first" else [page(*steady(0)), bad]
    async with ReplyServer([Reply(body) for body in pages]) as server:
        _, out, _ = await spectop("snapshot", server.url, "--window", "0.3", "--json")
    snapshot = json.loads(out)
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
        text = page(*steady(second)).decode()
        if second < 5:
            text += f'vllm:generation_tokens_total{{engine="1",model_name="m"}} {5e6 + 50 * second}\n'
        window.add(scrape(text, float(second)))
        figures = window.figures()
        if second >= 5:
            assert "figures end at the reading 2 s ago" in figures.notes["window"] or second == 5
            assert figures.acceptance_rate == pytest.approx(0.6)
    assert window.covered_s == pytest.approx(9.0)
