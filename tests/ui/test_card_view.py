"""What a card says: status from the last scrape and its age, "–" for unknowns, badges."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import pytest
from cut_figures import cut_words
from textual.app import App
from ui_waiting import Replayed, card_texts, wait_for

from tui.advice.advisor import Advice
from tui.configs.sglang_adaptive import candidate_steps
from tui.format import STEPS_UNKNOWN, TIERS_UNKNOWN, UNKNOWN, k_in_effect_row
from tui.screens.dashboard import CHART_CARD_ROWS, ROOMY_CARD_ROWS, card_height, card_layout
from tui.telemetry.alerts import Alert, AlertKind
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.series import EndpointSeries
from tui.widgets.card_view import (
    ALERT_LABEL,
    CARD_CHART_WINDOW_S,
    CardData,
    badge_line,
    card_lines,
    charts_fit,
    compact_lines,
    roomy_lines,
    short_model,
)
from tui.widgets.chart import FIGURE_CHARTS, GUTTER, chart_lines
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.figure_table import advice_lines, figure_rows, note_rows


def _reading(time: float, up: bool = True, **figures: float) -> EndpointReading:
    error = None if up else "connection refused"
    return EndpointReading(
        name="a", time=time, up=up, error=error, backend="vllm", figures=Figures(**figures)
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reading", "now", "restarting", "status"),
    [
        (None, 100.0, False, "● waiting"),
        (_reading(99.6), 100.0, False, "● up · scraped 0 s ago"),  # an age, not an uptime
        (_reading(40.0), 100.0, False, "● stale · scraped 1 min ago"),
        (_reading(99.0, up=False), 100.0, False, "● down 1 s"),
        (_reading(99.0, up=False), 100.0, True, "● restarting 1 s"),
        (_reading(40.0), None, False, "● up · scraped – ago"),  # no clock: never stale
    ],
)
def test_status_from_the_newest_scrape(
    reading: EndpointReading | None, now: float | None, restarting: bool, status: str
) -> None:
    data = CardData(name="a", reading=reading, now=now, stale_after_s=10, restarting=restarting)
    assert data.status_content().plain == status
    if reading is not None and not reading.up:
        assert "connection refused" in badge_line(data, 80).plain


def test_lines_fit_the_width_and_unknowns_are_dashes_never_old_figures() -> None:
    data = CardData(name="a", reading=_reading(1.0, generation_tokens_per_s=594.9), now=1.0)
    for lines in (compact_lines(data, 76), roomy_lines(data, 95)):
        assert all(line.cell_length <= 95 for line in lines)
        text = "\n".join(line.plain for line in lines)
        assert "594.9" in text and "–" in text and " 0%" not in text
    down = CardData(name="a", reading=_reading(1.0, up=False, generation_tokens_per_s=500.0), now=2.0)
    assert down.figures.generation_tokens_per_s is None
    assert "500" not in "\n".join(line.plain for line in compact_lines(down, 76))


def test_card_and_detail_figures_show_quantile_bounds_notes_and_the_restart() -> None:
    reading = _reading(1.0)
    reading.window_s = 8.0
    reading.figures = Figures(
        generation_tokens_per_s=120.0, ttft_mean_s=0.0065, ttft_p50_s=0.05, ttft_p95_s=0.095,
        quantile_bounds={"ttft_p50_s": (0.0, 0.1), "ttft_p95_s": (0.0, 0.1)},
        notes={
            "ttft_p50_s": "inside the first bucket (≤ 0.1 s): below 0.1 s, interpolated",
            "window": "restarted during the window (12 s ago), counted from zero; "
            "window still short: 8 s of 60 s",
        },
        covered_s=8.0, window_short=True, restarted_in_window=True, restarted_s_ago=12.0, running=1.0,
    )  # fmt: skip
    data = CardData(name="a", reading=reading, now=1.0, window_s=60.0)
    for lines in (compact_lines(data, 80), roomy_lines(data, 100)):
        text = "\n".join(line.plain for line in lines)
        assert "< 100 ms" in text and "50 ms" not in text
        assert "restarted 12 s ago · window 8 s of 1 min" in text
    rows = dict(figure_rows(data))  # the detail screen's figures, its notes and its title's caveat
    assert rows["TTFT p50"] == "< 100 ms" and rows["window"] == "8/60 s"
    notes = note_rows(data)
    assert any(note.startswith("TTFT p50: inside the first bucket") for note in notes)
    assert any("restarted during the window" in note for note in notes)
    assert "restarted 12 s ago" in (data.caveat() or "")


@pytest.mark.parametrize(
    ("note", "error", "shown"),
    [
        ("from finished requests only (llama.cpp counts a request when it ends)", None,
         "acceptance from finished requests only"),
        (None, "inconsistent page: the series vllm:num_requests_running{} appears more than once",
         "inconsistent page"),
    ],
    ids=["acceptance-from-finished-requests-while-one-runs", "inconsistent-page-error-although-up"],
)  # fmt: skip
def test_the_badge_line_says_what_qualifies_an_up_reading(
    note: str | None, error: str | None, shown: str
) -> None:
    reading = _reading(1.0, running=1.0)
    reading.error = error
    if note is not None:
        reading.figures.notes = {"acceptance_rate": note}
    assert shown in badge_line(CardData(name="a", reading=reading, now=1.0), 80).plain


def _history(spells: list[tuple[float, bool]]) -> EndpointSeries:
    history = EndpointSeries(256)
    for time, up in spells:
        history.add(time, Figures(generation_tokens_per_s=10.0) if up else None)
    return history


def test_a_down_endpoint_says_for_how_long_since_its_first_failed_scrape_and_its_url() -> None:
    # up until 9 s, down from 10 s (every second), now 100 s: down for 90 s, not "last scraped 1 s ago"
    history = _history([(float(t), t < 10) for t in range(100)])
    data = CardData(
        name="a", reading=_reading(99.0, up=False), history=history, now=100.0, url="http://10.0.0.5:8000"
    )
    assert data.down_for == 90.0
    assert data.status_content().plain == "● down 1 min"
    for lines in (compact_lines(data, 76), roomy_lines(data, 116)):
        assert lines[0].plain.startswith("down 1 min · http://10.0.0.5:8000")
        assert "connection refused" in lines[-1].plain
    # the spell is the latest one: an earlier outage does not count
    again = _history([(0.0, False), (1.0, True), (2.0, False), (3.0, False)])
    assert CardData(name="a", reading=_reading(3.0, up=False), history=again, now=5.0).down_for == 3.0


def _alerts() -> list[Alert]:
    return [
        Alert("a", "log_error", "warning", "CUDA error: an illegal memory access was encountered", 1.0),
        Alert("a", "engine_error", "warning", "engine core died", 1.5),
        Alert("a", "acceptance_critical", "critical", "acceptance 25% below 30% for 60 s", 2.0),
        Alert("a", "oom", "critical", "out of memory", 3.0),
    ]


def test_badges_critical_first_never_cut_those_that_do_not_fit_counted_and_every_kind_labelled() -> None:
    data = CardData(name="a", alerts=_alerts())
    for width in (76, 36, 20):  # an 80-column card, a half-width card, a tiny one
        line = badge_line(data, width).plain
        assert len(line) <= width
        assert line.startswith(" CRIT accept ")  # the critical badge whole, first
        shown = [
            badge for badge in (" CRIT accept ", " CRIT OOM ", " WARN log ", " WARN engine ") if badge in line
        ]
        hidden = 4 - len(shown)
        assert (f"+{hidden}" in line) == bool(hidden)
        assert " WARN" not in line.replace(" WARN log ", "").replace(" WARN engine ", "")  # no half badge
    alerts = [
        Alert("a", "acceptance_low", "warning", "acceptance 45% below 60%", 1.0),
        Alert("a", "acceptance_critical", "critical", "acceptance 25% below 30%", 2.0),
    ]
    line = badge_line(CardData(name="a", alerts=alerts), 80).plain
    assert line.index("CRIT") < line.index("WARN") and "below 30%" in line  # the worst's message
    kinds = get_args(AlertKind)  # every kind has its label
    assert "imbalance" in kinds and set(ALERT_LABEL) == set(kinds)
    for kind in kinds:
        line = badge_line(CardData(name="a", alerts=[Alert("a", kind, "warning", "why", 1.0)]), 80).plain
        assert line.startswith(f" WARN {ALERT_LABEL[kind]} ") and ALERT_LABEL[kind]


SSL_ERROR = "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1000)"


def test_the_badge_line_shortens_an_error_alert_or_advice_by_whole_words_and_says_a_context_advice() -> None:
    down = _reading(1.0, up=False)
    down.error = SSL_ERROR
    message = "acceptance 46% below 50%; mean length 2.40→1.60 since the draft model changed"
    advice = Advice(4, best_k=4, speedup_by_k={4: 1.0, 3: 1.02}, basis="measured step costs")
    cards = {
        SSL_ERROR: CardData(name="a", reading=down, now=2.0),
        message: CardData(name="a", alerts=[Alert("a", "acceptance_low", "warning", message, 1.0)]),
        advice.line(): CardData(name="a", reading=_reading(1.0), now=1.0, advice=advice),
    }
    for text, data in cards.items():
        for width in range(20, len(text) + 20):
            line = badge_line(data, width).plain
            assert len(line) <= width
            assert cut_words(text, [line]) is None, f"{width}: {line!r}"
            assert text in line or line.endswith("…")
    words = "at this context (18,000 prompt tokens), k=0: speculation stops paying from 16,384 at c=1"
    advice = Advice(2, context=words)  # no calibration (no basis): the context alone is worth saying
    line = badge_line(CardData(name="a", reading=_reading(1.0), now=1.0, advice=advice), 200).plain
    assert line.endswith(f"k=2 now · {words}")
    bare = CardData(name="a", reading=_reading(1.0), now=1.0, advice=Advice(2))  # nothing to say
    assert badge_line(bare, 200).plain.strip() == ""


def test_the_detail_advice_drops_its_basis_rather_than_show_part_of_it() -> None:
    basis = "the step costs measured at k=2-5 under the load of the last minutes"
    advice = Advice(4, best_k=4, speedup_by_k={4: 1.0, 3: 1.02}, basis=basis)
    line = f"advice {advice.line()}"
    assert advice_lines(advice, 78, 1) == [line]
    assert " ".join(part.strip() for part in advice_lines(advice, 78, 2)) == f"{line} ({advice.basis})"


async def test_long_model_names_keep_their_tail_or_the_part_that_differs_and_the_card_title_is_cut_left() -> (
    None
):
    assert short_model("deepseek-ai/DeepSeek-V3-0324", 40) == "deepseek-ai/DeepSeek-V3-0324"
    assert short_model("deepseek-ai/DeepSeek-V3-0324", 18) == "…DeepSeek-V3-0324"
    peers = ["meta-llama/Llama-3.1-8B-Instruct-FP8-dynamic"]
    seventy = "meta-llama/Llama-3.1-70B-Instruct-FP8-dynamic"
    assert short_model(seventy, 28, peers) == "…70B-Instruct-FP8-dynamic"
    short = short_model(seventy, 12, peers)
    assert short.startswith("…70B") and len(short) == 12  # the differing part, even when cut
    assert short_model(seventy, 12) == "…FP8-dynamic"
    assert len(short_model("x" * 50, 1)) == 1
    model = "/models/huggingface/hub/deepseek-ai/DeepSeek-V3-0324-FP8-dynamic-quantized"
    app: App[None] = App()
    async with app.run_test(size=(80, 8)) as pilot:
        await app.mount(
            EndpointCard(CardData(name="mtp-on", backend="vllm", model=model, reading=_reading(1.0), now=1.0))
        )
        await pilot.pause()
        title = str(app.query_one(EndpointCard).border_title)
        assert title.startswith("mtp-on · vllm · …") and title.endswith("FP8-dynamic-quantized")
        assert len(title) <= 76


def _positions(line: str) -> list[str]:
    return re.findall(r"[▁▂▃▄▅▆▇█](?:\d+%|<1%)", line)


def test_roomy_card_shows_per_position_acceptance_whole_at_59_columns() -> None:
    # a 59-column card at 120x36: 55 columns of content
    figures = {"ttft_p95_s": 0.137, "tpot_mean_s": 0.013, "mean_acceptance_length": 1.53, "running": 6.0}
    figures |= {"waiting": 1.0, "kv_cache_usage": 0.02, "prefix_cache_hit_rate": 0.48}
    two = CardData(name="a", reading=_reading(1.0, acceptance_rate=0.3, **figures), now=1.0)
    two.reading.figures.per_position_acceptance = [0.37, 0.17]  # type: ignore[union-attr]
    eight = CardData(name="a", reading=_reading(1.0), now=1.0)
    eight.reading.figures.per_position_acceptance = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]  # type: ignore[union-attr]
    for width in (55, 40):
        lines = [line.plain for line in roomy_lines(two, width)]
        assert all(len(line) <= width for line in lines)
        line = next(line for line in lines if "per pos" in line)
        assert _positions(line) == ["▃37%", "▁17%"]
        text = "\n".join(lines)
        for label in ("TTFT p95", "TPOT", "running", "waiting", "KV cache", "prefix hit", "mean len"):
            assert label in text or width < 55  # every figure of the card is still there
        line = next(line for line in roomy_lines(eight, width) if "per pos" in line.plain).plain
        shown = _positions(line)
        assert line.startswith("per pos " + " ".join(shown)) and len(line) <= width
        if width == 55:
            assert len(shown) == 8  # all eight fit on their own line
        else:
            assert 1 <= len(shown) < 8 and line.endswith("…")  # whole positions, and "…" for the others


def _ramp_history(
    now: float, count: int = 150, step_s: float = 2.0, markers: tuple[tuple[float, str], ...] = ()
) -> EndpointSeries:
    history = EndpointSeries(512)
    for index in range(count):
        time = now - (count - 1 - index) * step_s
        history.add(time, Figures(generation_tokens_per_s=200.0 * index / (count - 1), acceptance_rate=0.7))
    for marker in markers:
        history.mark(*marker)
    return history


def test_a_card_with_room_draws_the_detail_charts_from_its_own_history() -> None:
    now = 10_000.0
    reading = _reading(now, generation_tokens_per_s=200.0, acceptance_rate=0.7)
    history = _ramp_history(now, markers=((now - 60.0, "restart"),))
    data = CardData(name="a", reading=reading, history=history, now=now)
    width, height = 60, 20
    assert charts_fit(data, width, height)
    lines = [line.plain for line in card_lines(data, width, height)]
    assert len(lines) == height and all(len(line) <= width for line in lines)
    titles = [i for i, line in enumerate(lines) if line.startswith(("gen tok/s", "TTFT p50", "acceptance"))]
    assert [lines[index].split()[0] for index in titles] == ["gen", "TTFT", "acceptance"]
    assert len(titles) == len(FIGURE_CHARTS)
    # the y range at the left of the tokens/s chart: the ramp's bottom and top, in the vocabulary
    chart = lines[titles[0] + 1 : titles[1]]
    assert 190.0 < float(chart[0][:GUTTER]) <= 200.0 and 0.0 <= float(chart[-1][:GUTTER]) < 10.0  # means
    # ... the detail screen's chart of the same window and size, drawn from the card's history
    start = now - CARD_CHART_WINDOW_S
    detail = chart_lines(
        FIGURE_CHARTS[0], *history.window(FIGURE_CHARTS[0].key, start), start, now, width, len(chart) + 1
    )
    assert chart == [line.plain for line in detail[1:]]
    axis = next(line for line in lines if line.rstrip().endswith("now"))
    assert "-5 min" in axis and "R" in axis  # the time axis and the restart a minute ago
    assert "70%" in lines[titles[2]]  # the acceptance chart's title: the figure as the card writes it
    assert lines[-1] == badge_line(data, width).plain
    # too short, or too narrow: sparklines (roomy), then the compact lines; no time axis
    assert not any("-5 min" in line.plain for line in card_lines(data, width, 7))
    plain = lambda lines: [line.plain for line in lines]  # noqa: E731
    assert plain(card_lines(data, width, 7)) == plain(roomy_lines(data, width))
    assert plain(card_lines(data, width, 3)) == plain(compact_lines(data, width))
    assert not charts_fit(data, 30, 40)
    # a down card with charts says for how long and where, first; why it is down, last
    history = _ramp_history(now - 30.0)  # nothing for the last 30 s
    down = CardData(name="a", reading=_reading(now, up=False), history=history, now=now, url="http://h:1")
    lines = [line.plain for line in card_lines(down, 60, 20)]
    assert lines[0].startswith("down ") and "http://h:1" in lines[0]
    assert "connection refused" in lines[-1]


def test_card_height_gives_charts_the_room_only_when_every_card_gets_enough() -> None:
    def height(width: int, rows: int, count: int) -> int:
        layout = card_layout(width, rows, count)
        assert layout is not None
        return card_height(width, rows, count, *layout)

    assert height(200, 50, 3) == 48  # one row of three cards: the whole height
    assert height(120, 36, 3) == 17 >= CHART_CARD_ROWS  # two rows of cards
    assert height(120, 36, 6) == ROOMY_CARD_ROWS  # three rows: no room for charts, sparklines
    assert height(80, 24, 2) == ROOMY_CARD_ROWS  # the demo at 80x24 keeps its sparklines
    assert height(80, 24, 3) == 5  # compact
    assert height(40, 50, 1) == ROOMY_CARD_ROWS  # tall but too narrow for charts


async def test_dashboard_cards_carry_the_charts_at_200x50_and_120x36_not_at_80x24(replayed: Replayed) -> None:
    async with replayed((200, 50)) as (pilot, app):
        await pilot.pause()
        await wait_for(pilot, lambda: all("-5 min" in text for text in card_texts(app).values()))
        assert all("per pos" in text for text in card_texts(app).values())
        await pilot.resize_terminal(120, 36)
        await wait_for(pilot, lambda: all("-5 min" in text for text in card_texts(app).values()))
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: not any("-5 min" in text for text in card_texts(app).values()))
        assert all("tok/s" in text for text in card_texts(app).values())


# --- SGLang's adaptive steps: the tier in use beside the largest candidate, from `spec_num_steps`
# ("(adaptive)"), else the least tier that holds the accept length ("(adaptive, derived)"), else "–" and
# why; the tiers come from the endpoint's config file

TIERS = (1, 3, 7)


@pytest.mark.parametrize(
    ("figures", "tiers", "row"),
    [
        (Figures(k_in_effect=3.0), TIERS, ("steps in use", "3 of 7 (adaptive)", None)),
        (Figures(mean_acceptance_length=3.4), TIERS, ("steps in use", "3 of 7 (adaptive, derived)", None)),
        (Figures(mean_acceptance_length=4.2), TIERS, ("steps in use", "7 of 7 (adaptive, derived)", None)),
        (Figures(), TIERS, ("steps in use", UNKNOWN, STEPS_UNKNOWN)),
        (Figures(k_in_effect=1.0), (), ("steps in use", "1 (adaptive)", None)),
        (Figures(mean_acceptance_length=2.0), (), ("steps in use", UNKNOWN, TIERS_UNKNOWN)),
        (Figures(k_in_effect=3.0), None, ("k in effect", "3", None)),  # not adaptive: the k line as it was
        (Figures(), None, None),
    ],
)
def test_steps_in_use_row(figures: Figures, tiers: tuple[int, ...] | None, row: tuple | None) -> None:
    assert k_in_effect_row(figures, tiers) == row


def test_tiers_from_the_config_file(tmp_path: Path) -> None:
    adaptive = tmp_path / "adaptive.json"
    adaptive.write_text(json.dumps({"1": {"candidate_steps": [1, 2]}, "8": {"candidate_steps": [0, 5]}}))
    on = {"speculative_adaptive": True}
    assert candidate_steps({**on, "speculative_adaptive_config": str(adaptive)}) == (0, 1, 2, 5)
    assert candidate_steps(on) == TIERS  # SGLang's default candidates
    assert candidate_steps({**on, "speculative_adaptive_config": "adaptive.json"}) == ()  # the server's cwd
    assert candidate_steps({"speculative_num_steps": 3}) is None


def _sglang_card(figures: Figures, tiers: tuple[int, ...] | None) -> CardData:
    reading = EndpointReading(name="s", time=1.0, up=True, backend="sglang", figures=figures)
    return CardData(name="s", reading=reading, now=1.0, adaptive_steps=tiers)


def test_cards_and_detail_show_the_steps_in_use() -> None:
    card = _sglang_card(Figures(k_in_effect=3.0, mean_acceptance_length=3.2, running=4.0), TIERS)
    compact = "\n".join(line.plain for line in compact_lines(card, 80))
    roomy = "\n".join(line.plain for line in roomy_lines(card, 116))
    assert "steps in use 3 of 7 (adaptive)" in compact and "pos" not in compact
    assert "steps in use 3 of 7 (adaptive)" in roomy
    assert dict(figure_rows(card))["steps in use"] == "3 of 7 (adaptive)"
    unknown = _sglang_card(Figures(running=0.0), TIERS)
    assert dict(figure_rows(unknown))["steps in use"] == UNKNOWN
    assert f"steps in use: {STEPS_UNKNOWN}" in note_rows(unknown)
    plain = _sglang_card(Figures(running=4.0), None)  # not adaptive: the cards as before
    assert "steps in use" not in "\n".join(line.plain for line in compact_lines(plain, 80))
