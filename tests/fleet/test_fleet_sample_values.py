"""The poller reads Prometheus's samples as their JSON objects (`PrometheusClient.query_vector`): the same
values as `InstantSample.number` gives, so NaN, infinities and text that is not a number stay unknown
(left out, never 0), and a sample without labels or without `instance` counts for no instance."""

from __future__ import annotations

from tui.fleet.client import InstantSample, SampleJson, number
from tui.fleet.poller import _by_instance, _instance_rows, _positions

TEXTS = ["1.5", "0", "-2", "1e3", "NaN", "+Inf", "-Inf", "inf", "nan", "", "x", "1_000", " 7 "]


def _sample(labels: dict[str, str] | None, text: str) -> SampleJson:
    sample: SampleJson = {"value": (1.0, text)}
    if labels is not None:
        sample["metric"] = labels
    return sample


def test_values_by_instance_follow_number() -> None:
    samples = [_sample({"instance": f"i{index}"}, text) for index, text in enumerate(TEXTS)]
    expected = {f"i{index}": value for index, text in enumerate(TEXTS) if (value := number(text)) is not None}
    assert _by_instance(samples) == expected
    assert expected == {
        f"i{index}": InstantSample({"instance": f"i{index}"}, (1.0, text)).number
        for index, text in enumerate(TEXTS)
        if InstantSample({}, (1.0, text)).number is not None
    }
    assert "i4" not in expected and "i5" not in expected and expected["i0"] == 1.5


def test_samples_without_an_instance_count_for_none() -> None:
    samples = [
        _sample(None, "1"),
        _sample({}, "2"),
        _sample({"job": "x"}, "3"),
        _sample({"instance": "a"}, "4"),
    ]
    assert _by_instance(samples) == {"a": 4.0}
    assert _positions([_sample(None, "0.5"), _sample({"instance": "a", "position": "1"}, "0.5")]) == {
        "a": [0.0, 0.5]
    }


def test_discovery_reads_labels_without_copying_them_wrongly() -> None:
    samples = [
        _sample({"instance": "a", "job": "j", "backend": "vllm", "model_name": "m1", "team": "t"}, "3"),
        _sample({"instance": "a", "job": "j", "backend": "sglang", "model_name": "m2"}, "1"),
        _sample({"instance": "b", "backend": "llamacpp"}, "NaN"),  # no count: not an instance
    ]
    rows = _instance_rows(samples, "team")
    assert list(rows) == ["a"]
    assert (rows["a"].backend, rows["a"].model, rows["a"].job, rows["a"].group) == (
        "vllm",
        "m1, m2",
        "j",
        "t",
    )
