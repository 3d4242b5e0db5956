"""Fleet TTFT quantiles say the bucket they fall in, as direct scraping does: Prometheus'
`histogram_quantile` answers a bare number, so each instance's bucket bounds (`le`) are asked with the
first refresh (not every refresh), and a quantile in the first, the +Inf or a wide bucket is a bound;
until an instance's bounds are known its quantile is noted as interpolated."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from tests.fleet.fake_prometheus import WINDOW_S, A, Answer, B, FakePrometheus, healthy, settings, vector
from tui.fleet import poller as poller_module
from tui.fleet.poller import UNKNOWN_BUCKET, FleetPoller, bucket_bounds, bucket_of, quantile_notes
from tui.fleet.table_rows import Instance, fleet_rows
from tui.format import fmt_quantile

VLLM_LE = (
    "0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75", "1.0",
    "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0", "+Inf",
)  # fmt: skip
BUCKET_QUERY = "count by (instance, __name__, le)"


def le_rows(instance: str, bounds: tuple[str, ...] = VLLM_LE) -> list[tuple[dict[str, str], str]]:
    name = "vllm:time_to_first_token_seconds_bucket"
    return [({"instance": instance, "__name__": name, "le": le}, "1") for le in bounds]


def test_a_quantile_is_placed_in_the_bucket_prometheus_interpolated_it_in() -> None:
    bounds = (0.1, 0.25, 1.0, 10.0)
    assert bucket_of(0.05, bounds) == (0.0, 0.1)  # the first bucket, from 0
    assert bucket_of(0.1, bounds) == (0.0, 0.1)  # a bucket is (lower, upper]
    assert bucket_of(0.3, bounds) == (0.25, 1.0)
    assert bucket_of(10.0, bounds) == (10.0, math.inf)  # all histogram_quantile answers in +Inf
    assert bucket_of(0.3, ()) is None


def test_bounds_parsed_per_instance_and_histogram_numerically() -> None:
    samples = [
        {"metric": labels, "value": (0.0, value)}
        for labels, value in [
            *le_rows(A, ("1e+01", "0.5", "+Inf", "0.1000000001")),
            ({"instance": B, "__name__": "sglang:time_to_first_token_seconds_bucket", "le": "1"}, "2"),
            ({"instance": B, "__name__": "other_bucket", "le": "3"}, "1"),
            ({"__name__": "vllm:time_to_first_token_seconds_bucket", "le": "1"}, "1"),  # no instance
            ({"instance": B, "__name__": "vllm:time_to_first_token_seconds_bucket", "le": "x"}, "1"),
        ]
    ]
    assert bucket_bounds(samples) == {
        (A, "time_to_first_token_seconds"): (0.1000000001, 0.5, 10.0),
        (B, "time_to_first_token_seconds"): (1.0,),
    }


@pytest.mark.parametrize(
    ("value", "shown", "bounds", "note"),
    [
        (0.06, "<", (0.0, 0.1), "inside the first bucket"),
        (0.9, "", (0.5, 1.0), None),  # a bucket narrower than the value: the value says enough
        (7.0, "", (5.0, 7.5), None),
        (10.0, ">", (10.0, None), "above the highest bucket bound"),
        (2.0, "~", (1.0, 5.0), "inside one wide bucket"),
    ],
)
def test_bounds_and_notes_as_direct_scraping_gives_them(
    value: float, shown: str, bounds: tuple[float, float | None], note: str | None
) -> None:
    known = {(A, "time_to_first_token_seconds"): (0.1, 0.25, 0.5, 1.0, 5.0, 7.5, 10.0)}
    notes, placed = quantile_notes(A, {"ttft_p95_s": value}, known)
    if note is None:
        assert "ttft_p95_s" not in placed and "ttft_p95_s" not in notes
    else:
        assert placed["ttft_p95_s"] == bounds and note in notes["ttft_p95_s"]
        assert fmt_quantile(value, placed["ttft_p95_s"]).startswith(shown)
    unknown_notes, unknown_placed = quantile_notes(B, {"ttft_p95_s": value}, known)
    assert unknown_notes == {"ttft_p95_s": UNKNOWN_BUCKET} and unknown_placed == {}


def fleet_answer(
    ttft: dict[str, float], le: Callable[[], list[tuple[dict[str, str], str]]]
) -> Callable[[str, dict[str, str]], Answer]:
    def bounds(query: str) -> Answer | None:
        if query.startswith(BUCKET_QUERY):
            return 200, vector(*le()), 0.0
        return None

    return healthy(figures={"ttft_p95_s": ttft, "ttft_p50_s": ttft}, broken=bounds)


def bounds_asked(fake: FakePrometheus) -> int:
    return sum(seen.form.get("query", "").startswith(BUCKET_QUERY) for seen in fake.seen)


async def test_the_bounds_are_asked_with_the_first_refresh_only() -> None:
    answer = fleet_answer({A: 0.0005, B: 2560}, lambda: le_rows(A) + le_rows(B))
    async with FakePrometheus(answer) as fake, FleetPoller(settings(fake.url), WINDOW_S) as poller:
        first = await poller.refresh()
        second = await poller.refresh()
    assert first.queries == poller.queries_per_refresh + 1 and second.queries == poller.queries_per_refresh
    assert bounds_asked(fake) == 1
    readings = {reading.instance: reading for reading in second.readings}
    assert readings[A].figures.quantile_bounds == {"ttft_p95_s": (0.0, 0.001), "ttft_p50_s": (0.0, 0.001)}
    assert readings[B].figures.quantile_bounds["ttft_p95_s"] == (2560.0, None)
    assert "above the highest bucket bound" in readings[B].figures.notes["ttft_p95_s"]
    rows = {row.key: row for row in fleet_rows([Instance(r.instance, r, "up") for r in second.readings])}
    assert fmt_quantile(rows[A].ttft_p95_s, rows[A].ttft_p95_bounds) == "< 1 ms"  # the table's cell
    assert fmt_quantile(rows[B].ttft_p95_s, rows[B].ttft_p95_bounds) == "> 2560 s"
    group = next(row for row in rows.values() if row.summary)
    assert group.ttft_p95_bounds == (2560.0, None)  # the worst replica's, with its bucket


async def test_an_instance_without_bounds_is_interpolated_until_they_are_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    known = [le_rows(A)]
    answer = fleet_answer({A: 1.2, B: 1.2}, lambda: known[0])
    async with FakePrometheus(answer) as fake, FleetPoller(settings(fake.url), WINDOW_S) as poller:
        first = {r.instance: r for r in (await poller.refresh()).readings}
        assert first[B].figures.notes["ttft_p95_s"] == UNKNOWN_BUCKET and not first[B].figures.quantile_bounds
        assert first[A].figures.quantile_bounds["ttft_p95_s"] == (1.0, 2.5)
        await poller.refresh()
        assert bounds_asked(fake) == 1  # not every refresh: at most every BOUNDS_RETRY_S
        monkeypatch.setattr(poller_module, "BOUNDS_RETRY_S", 0.0)
        known[0] = le_rows(A) + le_rows(B)
        again = {r.instance: r for r in (await poller.refresh()).readings}
        assert bounds_asked(fake) == 2
        assert again[B].figures.quantile_bounds["ttft_p95_s"] == (1.0, 2.5)
        await poller.refresh()
        assert bounds_asked(fake) == 2  # every quantile has its bucket now: not asked again
