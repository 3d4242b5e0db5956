"""One refresh of a whole fleet through Prometheus: a constant number of queries, all evaluated at one
instant, a `FleetReading` per instance (the dashboard renders it as a scraped endpoint's reading).
Faults are data, never a crash and never 0: Prometheus failing makes every known instance unknown, a
target down or stale says so, a failed figure is None. Instances once seen stay listed (down).
Quantiles are placed in their instance's bucket bounds, asked once, with the notes of direct scraping."""

from __future__ import annotations

import asyncio
import bisect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from pydantic import Field

from tui.fleet.client import PrometheusClient, PrometheusError, SampleJson, number
from tui.fleet.queries import (
    FLEET_FIGURES,
    FigureQuery,
    discovery_query,
    engine_queries,
    figure_queries,
    selector,
    up_query,
    up_timestamp_query,
)
from tui.format import fmt_duration, fmt_setting
from tui.settings import PrometheusSettings
from tui.telemetry.backends import sglang, vllm
from tui.telemetry.backends.base import note_bucket
from tui.telemetry.figures import Figures
from tui.telemetry.plausible_figures import drop_impossible
from tui.telemetry.reading import EndpointReading
from tui.telemetry.series import SERIES_NAMES

# The quantile figures of fleet mode and the histogram each is of (llama.cpp has no TTFT histogram).
QUANTILE_HISTOGRAMS: dict[str, str] = {
    "ttft_p50_s": "time_to_first_token_seconds",
    "ttft_p95_s": "time_to_first_token_seconds",
}
_PREFIXES = (vllm.PREFIX, sglang.PREFIX)
UNKNOWN_BUCKET = "interpolated by Prometheus (histogram_quantile); its bucket bounds are not known yet"

Bounds = dict[tuple[str, str], tuple[float, ...]]  # (instance, histogram) -> its finite `le`, ascending
_BUCKETS = {f"{prefix}{name}_bucket": name for prefix in _PREFIXES for name in QUANTILE_HISTOGRAMS.values()}


def bucket_bounds_query(matchers: str) -> str:
    """One series per instance, histogram and bucket bound: `count by (instance, __name__, le)`."""
    series = selector("", matchers, f'__name__=~"{"|".join(sorted(_BUCKETS))}"')
    return f"count by (instance, __name__, le) ({series})"


def bucket_bounds(samples: Iterable[SampleJson]) -> Bounds:
    """The finite bucket bounds of each (instance, histogram) in the answer of `bucket_bounds_query`."""
    found: dict[tuple[str, str], set[float]] = {}
    for sample in samples:
        metric = sample.get("metric", {})
        instance, histogram = metric.get("instance"), _BUCKETS.get(metric.get("__name__", ""))
        bound = number(metric.get("le", ""))  # +Inf and what is no number left out
        if instance is None or histogram is None or bound is None:
            continue
        found.setdefault((instance, histogram), set()).add(bound)
    return {key: tuple(sorted(bounds)) for key, bounds in found.items()}


def bucket_of(value: float, bounds: tuple[float, ...]) -> tuple[float, float] | None:
    """The bucket (lower, upper) that `histogram_quantile` placed `value` in: the first bucket from 0,
    the +Inf bucket (upper inf) at the highest finite bound, which is all it answers there."""
    if not bounds or not math.isfinite(value):
        return None
    if value >= bounds[-1]:
        return bounds[-1], math.inf
    upper = bisect.bisect_left(bounds, value)  # the first bound >= value
    return (bounds[upper - 1] if upper else 0.0), bounds[upper]


def quantile_notes(
    instance: str, figures: Mapping[str, object], bounds: Bounds
) -> tuple[dict[str, str], dict[str, tuple[float, float | None]]]:
    """The notes and `quantile_bounds` of an instance's quantile figures, as direct scraping gives them."""
    notes: dict[str, str] = {}
    placed: dict[str, tuple[float, float | None]] = {}
    for figure, histogram in QUANTILE_HISTOGRAMS.items():
        value = figures.get(figure)
        if not isinstance(value, float | int):
            continue
        known = bounds.get((instance, histogram))
        bucket = bucket_of(float(value), known) if known else None
        if bucket is None:
            notes[figure] = UNKNOWN_BUCKET
            continue
        note_bucket(figure, float(value), bucket[0], bucket[1], notes, placed)
    return notes, placed


log = logging.getLogger(__name__)

_T = TypeVar("_T")
STALE_AFTER_S = 60.0  # a target Prometheus has not scraped for this long is stale
DISCOVERY_LOOKBACK_S = 300.0
MAX_CONCURRENT_QUERIES = 4
_MAX_POSITIONS = 64
BOUNDS_RETRY_S = 60.0  # the bucket bounds query again (instances without them), at most this often
_MAX_POINTS = 11_000  # Prometheus refuses a range query with more points per series
_NO_LABELS: dict[str, str] = {}  # a sample without a `metric` object (never written to)


class FleetReading(EndpointReading):
    """An EndpointReading from Prometheus, plus where the instance belongs."""

    instance: str
    job: str | None = None
    group: str | None = None  # the value of the settings' group_by label
    last_scrape_age_s: float | None = None
    # True when Prometheus itself failed (down, slow, an error): nothing is known of the target then.
    prometheus_error: bool = False
    # vLLM with several data-parallel engines: acceptance and tokens/s per `engine` label.
    engines: dict[str, Figures] = Field(default_factory=dict)

    @property
    def source_failed(self) -> bool:
        return self.prometheus_error


@dataclass
class FleetRefresh:
    time: float  # the evaluation time of every query of this refresh
    readings: list[FleetReading]
    error: str | None = None  # Prometheus itself failed (down, slow, status error)
    queries: int = 0  # HTTP requests sent for this refresh
    elapsed_s: float = 0.0
    figure_errors: dict[str, str] = field(default_factory=dict)  # figure -> why it is unknown


@dataclass
class _Instance:
    backend: str | None
    model: str | None
    job: str | None
    group: str | None
    consecutive_failures: int = 0
    impossible_figures: int = 0  # figures dropped as impossible so far (tui/telemetry/plausible_figures.py)


def by_instance(samples: Iterable[SampleJson]) -> dict[str, float]:
    """Each instance's value (`number`'s rule: NaN, infinities and non-numbers left out)."""
    values: dict[str, float] = {}
    for sample in samples:
        instance, value = sample.get("metric", _NO_LABELS).get("instance"), number(sample["value"][1])
        if instance is not None and value is not None:
            values[instance] = value
    return values


def _positions(samples: Iterable[SampleJson]) -> dict[str, list[float]]:
    """Per-position acceptance by instance, position 0 first (a missing position counts 0, as direct)."""
    found: dict[str, dict[int, float]] = {}
    for sample in samples:
        metric = sample.get("metric", _NO_LABELS)
        instance, value = metric.get("instance"), number(sample["value"][1])
        try:
            position = int(metric.get("position", ""))
        except ValueError:
            continue
        if instance is None or value is None or not 0 <= position < _MAX_POSITIONS:
            continue
        found.setdefault(instance, {})[position] = value
    return {
        instance: [by_position.get(position, 0.0) for position in range(max(by_position) + 1)]
        for instance, by_position in found.items()
    }


FigureAnswer = dict[str, float] | dict[str, list[float]]  # instance → value (per position: the list)
EngineAnswer = dict[str, dict[str, float]]  # instance → engine → value


def _figure_reducer(query: FigureQuery) -> Callable[[list[SampleJson]], FigureAnswer]:
    return _positions if query.by_position else by_instance


def _by_engine(samples: Iterable[SampleJson]) -> EngineAnswer:
    """Each instance's value per `engine` label (`number`'s rule)."""
    found: EngineAnswer = {}
    for sample in samples:
        metric = sample.get("metric", _NO_LABELS)
        instance, engine, value = metric.get("instance"), metric.get("engine"), number(sample["value"][1])
        if instance is not None and engine is not None and value is not None:
            found.setdefault(instance, {})[engine] = value
    return found


def _instance_rows(samples: Iterable[SampleJson], group_label: str) -> dict[str, _Instance]:
    """Discovery answer → instances: the backend with the most family names wins (as `detect_backend`)."""
    votes: dict[str, dict[str, float]] = {}
    models: dict[str, dict[str, None]] = {}
    labels: dict[str, dict[str, str]] = {}
    for sample in samples:
        metric = sample.get("metric", _NO_LABELS)
        instance, backend, count = metric.get("instance"), metric.get("backend"), number(sample["value"][1])
        if instance is None or backend is None or count is None:
            continue
        backend_votes = votes.setdefault(instance, {})
        backend_votes[backend] = max(backend_votes.get(backend, 0.0), count)
        if model := metric.get("model_name"):
            models.setdefault(instance, {})[model] = None
        labels.setdefault(instance, metric)  # the parsed answer is this refresh's own: no copy needed
    result = {}
    for instance, backend_votes in votes.items():
        backend = max(sorted(backend_votes), key=lambda name: backend_votes[name])
        model = ", ".join(list(models.get(instance, {}))[:3]) or None
        metric = labels[instance]
        group = model if group_label == "model" else metric.get(group_label)
        result[instance] = _Instance(backend, model, metric.get("job"), group)
    return result


class FleetPoller:
    """Everything Prometheus knows about the fleet, one `refresh()` at a time. Never raises."""

    def __init__(self, settings: PrometheusSettings, window_s: float) -> None:
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.settings = settings
        self.window_s = window_s
        self.matchers = settings.match or ""
        self.client = PrometheusClient(settings)
        self._instances: dict[str, _Instance] = {}
        self._discovered_once = False
        self._queries = figure_queries(self.matchers, window_s)
        self._engine_queries = engine_queries(self.matchers, window_s)
        self._semaphore = asyncio.Semaphore(MAX_CONCURRENT_QUERIES)
        self._bounds: Bounds = {}
        self._bounds_missing = True  # an instance has a quantile whose bucket bounds are not known
        self._bounds_asked = -math.inf  # monotonic

    async def __aenter__(self) -> FleetPoller:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()

    @property
    def queries_per_refresh(self) -> int:
        return 3 + len(self._queries) + len(self._engine_queries)

    async def _guarded(self, call: Callable[[], Awaitable[_T]], deadline: float) -> _T | PrometheusError:
        """`call()` with a slot among the concurrent queries; every failure comes back as data."""
        try:
            # One budget for the whole refresh: queries waiting for a slot do not each get a new one.
            async with asyncio.timeout_at(deadline), self._semaphore:
                return await call()
        except PrometheusError as error:
            return error
        except TimeoutError:
            return PrometheusError(f"Prometheus timeout after {fmt_setting(self.client.timeout_s)} s")
        except Exception as error:  # a bug must not stop the dashboard
            log.exception("a fleet refresh failed")
            return PrometheusError(f"internal error: {type(error).__name__}: {error}")

    def _discovery(self) -> str:
        # The first refresh looks back (over Prometheus' 5-minute lookback, or the window if longer),
        # so a target already down is listed too; later ones remember what they saw.
        lookback = None if self._discovered_once else max(self.window_s, DISCOVERY_LOOKBACK_S)
        return discovery_query(self.matchers, (self.settings.group_by,), lookback)

    async def refresh(self) -> FleetRefresh:
        """One refresh of every instance (a constant number of queries). Never raises (but on cancel)."""
        started = time.monotonic()
        requests_before = self.client.requests
        at = time.time()
        # The bucket bounds: with the first refresh, then only while an instance has a quantile whose bounds
        # are unknown (it came later, the query failed), at most every BOUNDS_RETRY_S.
        asking = self._bounds_missing and started - self._bounds_asked >= BOUNDS_RETRY_S
        deadline = asyncio.get_running_loop().time() + self.client.timeout_s

        def ask(expr: str, reduce: Callable[[list[SampleJson]], _T]) -> Awaitable[_T | PrometheusError]:
            async def answer() -> _T:  # reduced at once: a refresh's samples are never all alive together
                return reduce(await self.client.query_vector(expr, at))

            return self._guarded(answer, deadline)

        instances = partial(_instance_rows, group_label=self.settings.group_by)
        bounds_asked = [ask(bucket_bounds_query(self.matchers), bucket_bounds)] if asking else []
        discovery, up, scraped_at, figure_list, engine_list, bounds_list = await asyncio.gather(
            ask(self._discovery(), instances),
            ask(up_query(self.matchers), by_instance),
            ask(up_timestamp_query(self.matchers), by_instance),
            asyncio.gather(*(ask(query.expr, _figure_reducer(query)) for query in self._queries)),
            asyncio.gather(*(ask(query.expr, _by_engine) for query in self._engine_queries)),
            asyncio.gather(*bounds_asked),
        )
        figure_answers = dict(zip(self._queries, figure_list, strict=True))
        engine_answers = dict(zip(self._engine_queries, engine_list, strict=True))
        if asking:
            self._bounds_asked = started
        answers = (discovery, up, scraped_at)
        error = next((answer for answer in answers if isinstance(answer, PrometheusError)), None)
        if error is not None:
            readings = [
                self._unknown(instance, known, at, str(error)) for instance, known in self._instances.items()
            ]
            result = FleetRefresh(at, readings, error=str(error))
        else:
            assert not isinstance(discovery, PrometheusError)
            assert not isinstance(up, PrometheusError) and not isinstance(scraped_at, PrometheusError)
            self._discovered_once = True
            for instance, found in discovery.items():
                known = self._instances.get(instance)
                if known is not None:
                    found.consecutive_failures = known.consecutive_failures
                self._instances[instance] = found
            for bounds in bounds_list:
                if not isinstance(bounds, PrometheusError):
                    self._bounds = bounds
            result = self._readings(at, up, scraped_at, figure_answers, set(discovery))
            _add_engines(result.readings, engine_answers)
        result.queries = self.client.requests - requests_before
        result.elapsed_s = time.monotonic() - started
        return result

    def _unknown(self, instance: str, known: _Instance, at: float, error: str) -> FleetReading:
        known.consecutive_failures += 1
        return self._reading(instance, known, at, False, error, Figures(), prometheus_error=True)

    def _reading(
        self,
        instance: str,
        known: _Instance,
        at: float,
        up: bool,
        error: str | None,
        figures: Figures,
        age: float | None = None,
        prometheus_error: bool = False,
    ) -> FleetReading:
        return FleetReading(
            name=instance,
            url=instance,
            instance=instance,
            time=at,
            up=up,
            error=error,
            window_s=self.window_s,
            figures=figures,
            last_scrape_age_s=age,
            prometheus_error=prometheus_error,
            **vars(known),  # backend, model, job, group and the counts
        )

    def _readings(
        self,
        at: float,
        up: dict[str, float],
        scraped_at: dict[str, float],
        answers: dict[FigureQuery, FigureAnswer | PrometheusError],
        discovered: set[str],
    ) -> FleetRefresh:
        values: dict[str, dict[str, object]] = {}  # instance → figure → value (and notes, bounds)
        figure_errors: dict[str, str] = {}
        for query, answer in answers.items():
            if isinstance(answer, PrometheusError):
                figure_errors[query.figure] = str(answer)
                continue
            figure = query.figure
            for instance, value in answer.items():
                found = values.get(instance)
                if found is None:  # not setdefault: its default dict would be made for every sample
                    values[instance] = {figure: value}
                else:
                    found[figure] = value
        failed = "; ".join(f"{name}: {text}" for name, text in sorted(figure_errors.items()))
        readings = []
        self._bounds_missing = False
        for instance, known in sorted(self._instances.items()):
            age = at - scraped_at[instance] if instance in scraped_at else None
            if instance not in up:
                error: str | None = "no up series: Prometheus does not scrape this target now"
            elif up[instance] < 1:
                error = "target down (up == 0): Prometheus cannot scrape it"
            elif age is not None and age > STALE_AFTER_S:
                error = f"stale: last scraped {fmt_duration(age)} ago"
            else:
                error = None
            is_up = error is None
            if is_up and instance not in discovered:
                # Scraped fine, but its server's metric families are gone (another server there now?).
                error = f"no {known.backend or 'known'} metrics in Prometheus now"
            elif failed and is_up:
                error = failed
            known.consecutive_failures = 0 if is_up else known.consecutive_failures + 1
            known_values = values.get(instance) or {}  # this refresh's own: no copy
            notes, placed = quantile_notes(instance, known_values, self._bounds)
            self._bounds_missing |= UNKNOWN_BUCKET in notes.values()
            known_values["notes"] = notes
            known_values["quantile_bounds"] = placed
            figures = Figures.model_validate(known_values)
            known.impossible_figures += drop_impossible(figures)  # the endpoints' rules: dropped, counted
            readings.append(self._reading(instance, known, at, is_up, error, figures, age))
        return FleetRefresh(at, readings, figure_errors=figure_errors)

    async def load_history(self, history_s: float, step_s: float) -> dict[str, list[tuple[float, Figures]]]:
        """Every instance's figures every `step_s` over the last `history_s` s (one range query a figure)."""
        end = time.time()
        step_s = max(step_s, history_s / _MAX_POINTS, 0.001)
        start = end - history_s
        wanted = tuple(name for name in SERIES_NAMES if name in FLEET_FIGURES)
        queries = figure_queries(self.matchers, self.window_s, wanted)

        deadline = asyncio.get_running_loop().time() + self.client.timeout_s
        answers = await asyncio.gather(
            *(
                self._guarded(partial(self.client.query_range, query.expr, start, end, step_s), deadline)
                for query in queries
            )
        )
        points: dict[str, dict[float, dict[str, float]]] = {}
        for query, answer in zip(queries, answers, strict=True):
            if isinstance(answer, PrometheusError) or query.by_position:
                continue
            for series in answer:
                instance = series.metric.get("instance")
                if instance is None:
                    continue
                by_time = points.setdefault(instance, {})
                for stamp, text in series.values:
                    value = number(text)
                    if value is not None:
                        by_time.setdefault(round(stamp, 3), {})[query.figure] = value
        return {
            instance: [(stamp, _plausible(by_time[stamp])) for stamp in sorted(by_time)]
            for instance, by_time in points.items()
        }


def _add_engines(
    readings: list[FleetReading], answers: dict[FigureQuery, EngineAnswer | PrometheusError]
) -> None:
    """Per-engine figures of instances with two or more `engine` labels (a failed query adds nothing)."""
    engines: dict[str, dict[str, dict[str, float]]] = {}
    for query, answer in answers.items():
        if isinstance(answer, PrometheusError):
            continue
        for instance, by_engine in answer.items():
            for engine, value in by_engine.items():
                engines.setdefault(instance, {}).setdefault(engine, {})[query.figure] = value
    for reading in readings:
        found = engines.get(reading.instance, {})
        if len(found) >= 2:
            reading.engines = {engine: _plausible(values) for engine, values in sorted(found.items())}


def _plausible(values: dict[str, float]) -> Figures:
    """Figures from Prometheus's values, the impossible ones dropped with their notes (as an endpoint's)."""
    figures = Figures.model_validate(values)
    drop_impossible(figures)
    return figures
