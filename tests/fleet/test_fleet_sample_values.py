"""The poller reads Prometheus's samples with `number`'s rule, so NaN, infinities and text that is not a
number stay unknown (left out, never 0), a sample without labels or without `instance` counts for no
instance, and a sample that is not what the API sends makes that query's answer unexpected."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fleet.fake_fleet import Fleet40, instances
from tests.fleet.fake_prometheus import (
    FIGURE_OF,
    A,
    Answer,
    FakePrometheus,
    healthy,
    refresh_with,
    settings,
    vector,
)
from tui.fleet.client import SampleJson, number
from tui.fleet.poller import FleetPoller, _instance_rows, _positions, by_instance

TEXTS = ["1.5", "0", "-2", "1e3", "NaN", "+Inf", "-Inf", "inf", "nan", "", "x", "1_000", " 7 "]


def _sample(labels: dict[str, str] | None, text: str) -> SampleJson:
    sample: SampleJson = {"value": (1.0, text)}
    if labels is not None:
        sample["metric"] = labels
    return sample


def test_values_by_instance_follow_number_and_need_an_instance() -> None:
    samples = [_sample({"instance": f"i{index}"}, text) for index, text in enumerate(TEXTS)]
    samples += [_sample(None, "1"), _sample({}, "2"), _sample({"job": "x"}, "3")]  # for no instance
    expected = {f"i{index}": value for index, text in enumerate(TEXTS) if (value := number(text)) is not None}
    assert by_instance(samples) == expected
    assert "i4" not in expected and "i5" not in expected and expected["i0"] == 1.5
    by_position = _positions([_sample(None, "0.5"), _sample({"instance": "a", "position": "1"}, "0.5")])
    assert by_position == {"a": [0.0, 0.5]}


def test_discovery_reads_labels_without_copying_them_wrongly() -> None:
    samples = [
        _sample({"instance": "a", "job": "j", "backend": "vllm", "model_name": "m1", "team": "t"}, "3"),
        _sample({"instance": "a", "job": "j", "backend": "sglang", "model_name": "m2"}, "1"),
        _sample({"instance": "b", "backend": "llamacpp"}, "NaN"),  # no count: not an instance
    ]
    rows = _instance_rows(samples, "team")
    assert list(rows) == ["a"]
    row = rows["a"]
    assert (row.backend, row.model, row.job, row.group) == ("vllm", "m1, m2", "j", "t")


NOT_THE_API = [
    "not an object",
    {"value": [1.0, "1"], "metric": ["instance", "a"]},
    {"value": [1.0, "1"], "metric": {"instance": 7}},
    {"value": [1.0, "1"], "metric": None},
    {"metric": {"instance": "a"}},
    {"metric": {"instance": "a"}, "value": "12"},
    {"metric": {"instance": "a"}, "value": [1.0, 12]},
    {"metric": {"instance": "a"}, "value": [1.0]},
    {"metric": {"instance": "a", "position": 1}, "value": [1.0, "1"]},
]


@pytest.mark.parametrize("sample", NOT_THE_API, ids=range(len(NOT_THE_API)))
async def test_a_sample_not_as_the_api_sends_it_fails_its_figure_only(sample: Any) -> None:
    figure = "generation_tokens_per_s"
    expr = next(query for query, name in FIGURE_OF.items() if name == figure)

    def odd(query: str) -> Answer | None:
        if query != expr:
            return None
        answer = vector(({"instance": A}, "1"))
        answer["data"]["result"].append(sample)
        return 200, answer, 0.0

    refresh = await refresh_with(healthy(broken=odd))
    assert refresh.error is None
    assert refresh.figure_errors[figure].startswith("Prometheus: unexpected answer to")
    reading = next(reading for reading in refresh.readings if reading.instance == A)
    assert reading.figures.generation_tokens_per_s is None
    assert reading.figures.acceptance_rate is not None


# --- a refresh reduces each answer as it arrives: its parsed samples set off no garbage collection ----------


THRESHOLD = 20_000  # young objects: about those of one refresh's parsed samples here (10 answers of 1,000)
REFRESHES = 6


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """Young collections counted while the test runs, with the heap frozen and THRESHOLD set."""
    counted = [0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0:
            counted[0] += 1

    thresholds = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(THRESHOLD, *thresholds[1:])
    gc.callbacks.append(count)
    try:
        yield counted
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        gc.unfreeze()


async def test_refreshes_of_1000_instances_set_off_few_collections(collections: list[int]) -> None:
    fleet = Fleet40(instances(1000))
    async with (
        FakePrometheus(fleet.answer) as prometheus,
        # 60 s: only a hang guard (2 s, the fake's usual, can pass on a busy host before 1,000 answers do)
        FleetPoller(settings(prometheus.url, timeout_s=60.0), 30.0) as poller,
    ):
        first = await poller.refresh()
        assert len(first.readings) == 1000 and first.error is None
        collections[0] = 0
        for _ in range(REFRESHES):
            refresh = await poller.refresh()
            assert sum(reading.up for reading in refresh.readings) == 999
    # Answers kept until the refresh ends: two collections per refresh. Reduced as they come: the
    # readings' own objects (made while the last refresh's are still alive) now and then.
    assert collections[0] <= REFRESHES // 3
