"""A fast, strict parser for the Prometheus text format (`MetricsFormatError` names the bad line)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["MetricsFormatError", "MetricsParser", "Sample", "parse_metrics_text"]


class MetricsFormatError(ValueError):
    """The text is not Prometheus exposition text; the message names the line."""


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float
    series: str  # `name{labels}` as printed: the same on every scrape of one series (a cache key)


_LABEL_VALUE = r'"(?:[^"\\\n]|\\.)*"'
_LABEL = rf"[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*{_LABEL_VALUE}[ \t]*"
_SAMPLE_RE = re.compile(
    r"([a-zA-Z_:][a-zA-Z0-9_:]*)"  # metric name
    rf"(?:[ \t]*\{{((?:{_LABEL}(?:,{_LABEL})*,?)?[ \t]*)\}})?"  # optional label block
    r"[ \t]+([^ \t\r#]+)"  # value
    r"(?:[ \t]+([^ \t\r#]+))?"  # optional timestamp
    r"(?:[ \t]+#.*)?"  # optional OpenMetrics exemplar
    r"[ \t\r]*"  # a lone \r can end the last line
)
_LABEL_PAIR_RE = re.compile(rf"([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*({_LABEL_VALUE})")
_ESCAPE_RE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "\\": "\\", '"': '"'}
_EMPTY_LABELS: Mapping[str, str] = MappingProxyType({})
# A parser's label and head caches are bounded: each is cleared when full.
_LABEL_CACHE_MAX = 20_000
_SPARE_LINES = 64  # lines kept beyond two pages' worth before the line cache is pruned
_MAX_QUOTED_LINE = 120
_MAX_CACHED_LINE = 512


def _unescape(match: re.Match[str]) -> str:
    return _ESCAPES.get(match[1], "\\" + match[1])


def _parse_labels(block: str) -> Mapping[str, str]:
    labels: dict[str, str] = {}
    for key, quoted in _LABEL_PAIR_RE.findall(block):
        value = quoted[1:-1]
        if "\\" in value:
            value = _ESCAPE_RE.sub(_unescape, value)
        labels[key] = value
    return MappingProxyType(labels)


def parse_value(text: str) -> float:
    """A sample value as Prometheus prints it; ValueError also for what only Python reads (`1_000`)."""
    if "_" in text or not text.isascii():
        raise ValueError(text)
    return float(text)


def _quote(line: str) -> str:
    return repr(line if len(line) <= _MAX_QUOTED_LINE else line[:_MAX_QUOTED_LINE] + "…")


def _body_start(text: str) -> tuple[int, int]:
    """Offset of the body and the number of lines before it (an HTTP header block is skipped)."""
    if not text.startswith("HTTP/"):
        return 0, 0
    ends = [position + len(end) for end in ("\r\n\r\n", "\n\n") if (position := text.find(end)) != -1]
    if not ends:
        raise MetricsFormatError("line 1: HTTP response headers without a body (expected a blank line)")
    start = min(ends)
    return start, text.count("\n", 0, start)


def _format_error(line_number: int, line: str) -> MetricsFormatError:
    return MetricsFormatError(
        f'line {line_number}: expected a metric sample `name{{label="value"}} value` '
        f"or a # comment, got {_quote(line)}"
    )


def _parse_line(line: str, line_number: int) -> tuple[str, str, str | None, float, bool] | None:
    """The full grammar: None for a blank line, else (name, series, labels, value, value ends the line)."""
    match = _SAMPLE_RE.fullmatch(line)
    if match is None:
        if line.isspace():
            return None
        raise _format_error(line_number, line)
    name, block, value_text, timestamp = match.groups()
    try:
        value = parse_value(value_text)
    except ValueError:
        raise MetricsFormatError(
            f"line {line_number}: expected a number (like 12, 3.5e+06, NaN or +Inf) "
            f"as the value of {name}, got {value_text!r}"
        ) from None
    if timestamp is not None:
        try:
            parse_value(timestamp)
        except ValueError:
            raise MetricsFormatError(
                f"line {line_number}: expected a timestamp (a number) after the value of {name}, "
                f"got {timestamp!r}"
            ) from None
    value_start = match.start(3)
    ends_line = match.end(3) == len(line) and line[value_start - 1] == " "
    return name, line[:value_start].rstrip(" \t"), block, value, ends_line


class MetricsParser:
    """Parses the /metrics pages of ONE endpoint, caching what repeats between its scrapes (label blocks,
    `name{labels}` heads, whole lines): `tests/benchmarks/bench_metrics_parse.py` shows what that pays."""

    __slots__ = ("_heads", "_labels", "_lines")

    def __init__(self) -> None:
        self._labels: dict[str, Mapping[str, str]] = {}
        self._heads: dict[str, tuple[str, Mapping[str, str], str]] = {}
        self._lines: dict[str, Sample] = {}

    def parse(self, text: str) -> list[Sample]:
        """Every sample on a /metrics page, in page order (see `parse_metrics_text`)."""
        start, skipped_lines = _body_start(text)
        body = text[start:] if start else text
        if "\r" in body:
            body = body.replace("\r\n", "\n")
        samples: list[Sample] = []
        append = samples.append
        heads = self._heads
        lines = self._lines
        page = body.split("\n")
        for index, line in enumerate(page):
            if not line or line[0] == "#":
                continue
            # Fastest path: the very same line was on an earlier page.
            sample = lines.get(line)
            if sample is None:
                # Fast path: the `name{labels}` part of the line was validated on an earlier scrape.
                head, _, value_text = line.rpartition(" ")
                known = heads.get(head)
                if known is not None:
                    try:
                        sample = Sample(known[0], known[1], parse_value(value_text), known[2])
                    except ValueError:
                        sample = None  # the careful path below names the problem
                if sample is None:
                    sample = self._careful(line, index + 1 + skipped_lines)
                    if sample is None:
                        continue
                if len(line) <= _MAX_CACHED_LINE:
                    lines[line] = sample
            append(sample)
        if len(lines) > 2 * len(samples) + _SPARE_LINES:  # values that moved left lines no page has now
            self._lines = {line: lines[line] for line in page if line in lines}
        return samples

    def _careful(self, line: str, line_number: int) -> Sample | None:
        parsed = _parse_line(line, line_number)
        if parsed is None:
            return None
        name, series, block, value, ends_line = parsed
        labels = self._labels_of(block) if block else _EMPTY_LABELS
        if ends_line:  # remember the validated head (the text before the value's space) for the fast path
            if len(self._heads) >= _LABEL_CACHE_MAX:
                self._heads.clear()
            self._heads[line.rpartition(" ")[0]] = (name, labels, series)
        return Sample(name, labels, value, series)

    def _labels_of(self, block: str) -> Mapping[str, str]:
        cached = self._labels.get(block)
        if cached is None:
            if len(self._labels) >= _LABEL_CACHE_MAX:
                self._labels.clear()
            cached = self._labels[block] = _parse_labels(block)
        return cached


def parse_metrics_text(text: str, parser: MetricsParser | None = None) -> list[Sample]:
    """Every sample on a /metrics page in order (MetricsFormatError if it is not Prometheus text)."""
    return (parser or MetricsParser()).parse(text)
