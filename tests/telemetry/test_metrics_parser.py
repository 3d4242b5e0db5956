"""The Prometheus text parser: real pages, every number/label form, clear errors, per-endpoint caches."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metrics_test_server import SAMPLES, sample_body
from prometheus_client.parser import text_string_to_metric_families

from tui.telemetry import prometheus
from tui.telemetry.prometheus import MetricsFormatError, MetricsParser, Sample, parse_metrics_text


def _key(name: str, labels: object, value: float) -> tuple:
    # prometheus_client renames a `counter` sample without `_total` (llama.cpp's n_tokens_max).
    name = name.removesuffix("_total")
    return (name, tuple(sorted(dict(labels).items())), "nan" if math.isnan(value) else value)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "page",
    [f"{backend}/metrics_t{index}.txt" for backend in ("vllm", "sglang", "llamacpp") for index in (0, 1)],
)
def test_sample_pages_match_prometheus_client(page: str) -> None:
    backend, name = page.split("/")
    body = sample_body(backend, name).decode()
    ours = [_key(s.name, s.labels, s.value) for s in parse_metrics_text(body)]
    reference = [
        _key(s.name, s.labels, s.value)
        for family in text_string_to_metric_families(body)
        for s in family.samples
    ]
    assert len(ours) == len(reference) > 0
    assert sorted(ours, key=repr) == sorted(reference, key=repr)


def test_http_header_block_is_skipped() -> None:
    raw = (SAMPLES / "llamacpp" / "metrics_t1.txt").read_bytes().decode()
    assert raw.startswith("HTTP/1.1 200")
    samples = parse_metrics_text(raw)
    values = {s.name: s.value for s in samples if not s.labels}
    assert values["llamacpp:tokens_predicted_total"] == 704
    assert values["llamacpp:n_busy_slots_per_decode"] == pytest.approx(1.31343)
    positions = [s for s in samples if s.name.endswith("per_pos_total")]
    assert [s.labels["position"] for s in positions] == [str(i) for i in range(8)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.440309248e+010", 1.440309248e10),
        ("1.440309248e+10", 1.440309248e10),
        ("2.457724e+06", 2457724.0),
        ("1.23457e+06", 1234570.0),
        ("-3.5E-3", -0.0035),
        ("+Inf", math.inf),
        ("-Inf", -math.inf),
        ("Inf", math.inf),
        ("7", 7.0),
        (".5", 0.5),
        ("NaN", math.nan),
    ],
)
def test_number_forms(text: str, value: float) -> None:
    (sample,) = parse_metrics_text(f"m {text}\n")
    assert sample.value == value or (math.isnan(sample.value) and math.isnan(value))


def test_labels_any_order_escapes_and_trailing_comma() -> None:
    page = (
        'a{z="1",b="x\\"y\\\\z\\nw",} 1\n'
        'a{b="2" , z="}{,=" } 2 1712345678000\n'
        "a {} 3\n"
        'b_bucket{le="1.1e+06"} 4\n'
        'b_bucket{le="0.0016200000000000001"} 5 # {trace_id="abc"} 0.5\n'
        "# EOF\n"
    )
    first, second, third, bucket, noisy = parse_metrics_text(page)
    assert dict(first.labels) == {"z": "1", "b": 'x"y\\z\nw'}
    assert dict(second.labels) == {"b": "2", "z": "}{,="}
    assert (second.value, third.value, dict(third.labels)) == (2.0, 3.0, {})
    assert float(bucket.labels["le"]) == 1.1e6
    assert noisy.value == 5.0 and float(noisy.labels["le"]) == pytest.approx(0.00162)


def test_crlf_blank_lines_comments_and_a_lone_carriage_return() -> None:
    page = "# HELP x Something\r\n# TYPE x counter\r\n\r\n   \r\nx_total 3\r\n# a free comment\r\n"
    (sample,) = parse_metrics_text(page)
    assert (sample.name, sample.value) == ("x_total", 3.0)
    assert [s.value for s in parse_metrics_text('a{x="y"} 2\r\na{x="y"} 3\r')] == [2.0, 3.0]
    assert [s.value for s in parse_metrics_text("b 1 123\r")] == [1.0]


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        ("<!DOCTYPE html>\n<html></html>\n", r"line 1: expected a metric sample"),
        ('{"detail": "Not Found"}', r"line 1: expected a metric sample"),
        ("ok 1\nok 2\nbad line here\n", r"line 3: expected a number .* value of bad"),
        ('m{a="unterminated} 1\n', r"line 1: expected a metric sample"),
        ('m{1a="x"} 1\n', r"line 1"),
        ("m\n", r"line 1: expected a metric sample"),
        ("m one\n", r"line 1: expected a number"),
        ('m{a="b"} 1_000\n', r"line 1: expected a number .* got '1_000'"),
        ("m 1 notatime\n", r"line 1: expected a timestamp"),
        ("HTTP/1.1 200 OK\r\nServer: x\r\n", r"line 1: HTTP response headers without a body"),
        # line numbers count the header block
        ("HTTP/1.1 200 OK\r\nServer: x\r\n\r\nok_total 1\n<html>\n", r"^line 5: expected a metric sample"),
    ],
)
def test_not_prometheus_text_says_where_and_what(page: str, expected: str) -> None:
    with pytest.raises(MetricsFormatError, match=expected):
        parse_metrics_text(page)


def test_error_message_quotes_long_lines_briefly() -> None:
    with pytest.raises(MetricsFormatError) as caught:
        parse_metrics_text("x" * 5000 + " y z w\n")
    assert len(str(caught.value)) < 300


@settings(max_examples=600, deadline=None)
@given(st.text() | st.binary().map(lambda data: data.decode("utf-8", errors="replace")))
def test_arbitrary_text_or_bytes_parse_or_raise_metrics_format_error(text: str) -> None:
    try:
        samples = parse_metrics_text(text)
    except MetricsFormatError:
        return
    for sample in samples:
        assert isinstance(sample.value, float)


_name = st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,12}", fullmatch=True)
_label_value = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=8
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            _name,
            st.dictionaries(
                st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,6}", fullmatch=True), _label_value, max_size=3
            ),
            st.floats(allow_nan=False),
        ),
        max_size=8,
    )
)
def test_round_trip_of_generated_pages(rows: list[tuple[str, dict[str, str], float]]) -> None:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"')

    lines = []
    for name, labels, value in rows:
        block = ",".join(f'{key}="{escape(text)}"' for key, text in labels.items())
        lines.append(f"{name}{{{block}}} {value!r}" if labels else f"{name} {value!r}")
    samples = parse_metrics_text("\n".join(lines))
    assert [(s.name, dict(s.labels), s.value) for s in samples] == [
        (name, labels, float(repr(value))) for name, labels, value in rows
    ]


# --- an endpoint's parser remembers the lines it has seen ---------------------------------------------------


def _same(first: list[Sample], second: list[Sample]) -> bool:
    return len(first) == len(second) and all(
        (a.name, dict(a.labels)) == (b.name, dict(b.labels))
        and (a.value == b.value or (math.isnan(a.value) and math.isnan(b.value)))
        for a, b in zip(first, second, strict=True)
    )


@pytest.mark.parametrize("backend", ["vllm", "sglang", "llamacpp"])
def test_a_page_parsed_again_gives_the_same_samples(backend: str) -> None:
    parser = MetricsParser()
    for name in ("metrics_t0.txt", "metrics_t1.txt", "metrics_t0.txt"):
        text = sample_body(backend, name).decode()
        first = parser.parse(text)
        again = parser.parse(text)
        assert _same(first, parse_metrics_text(text))  # no parser: nothing remembered
        assert _same(again, first)
        lines = [line for line in text.replace("\r\n", "\n").split("\n") if line and line[0] != "#"]
        short = [len(line) <= prometheus._MAX_CACHED_LINE for line in lines]
        assert len(short) == len(first)
        # Reused, not rebuilt; only very long lines (vLLM's cache_config_info) are parsed again.
        assert [a is b for a, b in zip(first, again, strict=True)] == short


def test_a_changed_value_is_read_afresh() -> None:
    parser = MetricsParser()
    assert [s.value for s in parser.parse('x_total{a="1"} 1\n')] == [1.0]
    assert [s.value for s in parser.parse('x_total{a="1"} 2\n')] == [2.0]
    assert [s.value for s in parser.parse('x_total{a="1"} 1\n')] == [1.0]


def test_about_one_page_is_kept() -> None:
    """However long an endpoint is watched, its parser holds about a page of lines, not every value it saw."""
    parser = MetricsParser()
    stable = "".join(f'stable{{i="{i}"}} {i}\n' for i in range(4))
    for step in range(50):
        text = stable + "".join(f'moving{{i="{i}"}} {step * 10 + i}\n' for i in range(3))
        samples = parser.parse(text)
        assert [s.value for s in samples] == [0, 1, 2, 3, step * 10, step * 10 + 1, step * 10 + 2]
        assert len(parser._lines) <= 2 * len(samples) + prometheus._SPARE_LINES
    assert set(text.splitlines()) <= set(parser._lines)


def test_a_bad_line_after_good_ones_fails_with_its_line_and_keeps_the_previous_lines() -> None:
    parser = MetricsParser()
    first = parser.parse("a 1\nb 2\n")
    with pytest.raises(MetricsFormatError, match="line 2: expected a number"):
        parser.parse("a 1\nb two\n")
    assert [a is b for a, b in zip(first, parser.parse("a 1\nb 2\n"), strict=True)] == [True, True]


def test_very_long_lines_are_not_kept() -> None:
    parser = MetricsParser()
    label = "v" * 2000
    samples = parser.parse(f'long{{a="{label}"}} 1\nshort 2\n')
    assert [s.value for s in samples] == [1.0, 2.0]
    assert list(parser._lines) == ["short 2"]


def test_each_endpoint_has_its_own_caches() -> None:
    """A second endpoint's pages neither evict nor share the first one's entries (no module globals)."""
    first, second = MetricsParser(), MetricsParser()
    vllm_page = sample_body("vllm", "metrics_t0.txt").decode()
    before = first.parse(vllm_page)
    for name in ("metrics_t0.txt", "metrics_t1.txt"):
        second.parse(sample_body("sglang", name).decode())
    assert all(a is b for a, b in zip(before, first.parse(vllm_page), strict=True) if len(a.series) < 400)
    assert not any(a is b for a, b in zip(before, second.parse(vllm_page), strict=True))
    assert not [name for name in vars(prometheus) if name.endswith("_CACHE")]  # no process-global cache
