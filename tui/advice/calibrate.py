"""`spectop tune --calibrate`: a short sweep made for the step-cost model (a few k around the file's own,
0 where the config can switch speculation off; loads 1 and about the live one), and the model it fits."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import httpx

from tui.advice.stepcost import (
    SIM_SOURCE,
    CostPoint,
    StepCostError,
    StepCostModel,
    caveat,
    config_facts,
    endpoint_key,
    fit,
    fit_replicates,
    save_model,
)
from tui.bench.stats import pooled_rate
from tui.configs.editing import open_config_async
from tui.format import fmt_count, fmt_duration, fmt_latency, fmt_rate
from tui.sim.behaviour import Behaviour
from tui.sim.config import SimConfigError, load_sim_config
from tui.telemetry.scraper import scrape_metrics
from tui.tune.result import CellRun, TuneCell, TuneResult
from tui.tune.runner import TuneOptions, client_or_own

CALIBRATION_REQUESTS = 16
CALIBRATION_MAX_TOKENS = 32  # the step time is what is measured: a short request measures it as well
CALIBRATION_ROUNDS = 2  # at least: a point measured once shows nothing of the host's drift
RESAMPLES = 200  # refits of the model on replicates of its points
KEPT_REPLICATES = 100  # of them kept with the model (the advisor's intervals)
# Student's t, 97.5th percentile, for 1..30 degrees of freedom (the 95% intervals of a handful of bursts)
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
LIVE_SCRAPES = 4
LIVE_INTERVAL_S = 1.0
MAX_LOAD = 64


def calibration_values(current_k: int | None, zero_is_off: bool = False) -> tuple[int, ...]:
    """A few k around the file's own (k-2 .. k+1, from 1 up), and 0 first where 0 is speculation off: it pins
    the intercept, and three values above 0 then fit and check the line."""
    k = current_k if current_k and current_k > 0 else 2
    values = list(range(max(1, k - 2), k + 2))
    while len(values) < 3:
        values.append(values[-1] + 1)
    if zero_is_off and len(values) > 3:
        values.remove(k - 1)
    return (0, *values) if zero_is_off else tuple(values)


def calibration_loads(live_running: float | None) -> tuple[int, ...]:
    """1, the live load and twice it (rounded, at most MAX_LOAD); 1 and 4 when nothing runs."""
    live = max(1, min(MAX_LOAD, round(live_running or 0)))
    if live <= 1:
        return (1, 4)
    return tuple(sorted({1, live, min(MAX_LOAD, 2 * live)}))


async def live_load(
    client: httpx.AsyncClient, metrics_url: str, *, scrapes: int = LIVE_SCRAPES
) -> tuple[float | None, float | None]:
    """What the server does before the calibration: its mean running requests and time per output token
    over a few scrapes (None where not shown)."""
    from tui.telemetry.window import figures_between

    running: list[float] = []
    token: list[float] = []
    previous = None
    for index in range(scrapes):
        scrape = await scrape_metrics(client, metrics_url, timeout_s=3.0)
        if scrape.up and previous is not None:
            figures = figures_between(previous, scrape)
            if figures.running is not None:
                running.append(figures.running)
            if figures.tpot_mean_s is not None and figures.tpot_mean_s > 0:
                token.append(figures.tpot_mean_s)
        if scrape.up:
            previous = scrape
        if index < scrapes - 1:
            await asyncio.sleep(LIVE_INTERVAL_S)
    return (sum(running) / len(running) if running else None), (sum(token) / len(token) if token else None)


def calibration_time_s(options: TuneOptions, token_s: float | None) -> float | None:
    """The bursts' time, roughly: per round, value and load, the waves of `requests` at that load each
    `max_tokens` tokens at the live time per token (None when that is unknown; restarts not counted)."""
    if token_s is None or options.max_tokens is None:
        return None
    waves = sum(math.ceil(options.requests / load) for load in options.concurrencies)
    return options.rounds * len(options.values) * waves * options.max_tokens * token_s


@dataclass(frozen=True)
class Calibration:
    """What the step-cost model will be keyed by, read before the sweep."""

    endpoint: str
    model: str | None
    settings: str | None
    key: str
    current_k: int | None
    background: float = 0.0  # the running requests seen live before the sweep: beside every burst
    zero_is_off: bool = False  # value 0 of the key is speculation off (vLLM, SGLang; not a plain key)


async def read_calibration(
    config_file: Path, endpoint: str, key: str | None, model: str | None
) -> Calibration:
    from tui.tune.plan import TunePlanError, default_key

    opened = await open_config_async(config_file)
    current, digest, name = (
        (None, None, None) if opened.document is None else config_facts(opened.document, key)
    )
    zero_is_off = False
    if opened.document is not None:
        with contextlib.suppress(TunePlanError):  # no key to sweep: the tune's own planning says so
            zero_is_off = default_key(opened.document, key).style != "plain"
    return Calibration(endpoint_key(endpoint), model, digest, name or key or "k", current, 0.0, zero_is_off)


def _length(outcome_value: int, cell: TuneCell, runs: list[CellRun]) -> float | None:
    """The point's acceptance length: exactly 1 with speculation off; else the bursts' own lengths
    weighted by their decode tokens (the cell's, the latest round's, when the bursts carry none)."""
    if outcome_value == 0:
        return 1.0
    weighted = [
        (run.mean_acceptance_length, sum(a for a, _ in run.samples))
        for run in runs
        if run.mean_acceptance_length is not None
    ]
    total = sum(weight for _, weight in weighted)
    if runs and len(weighted) == len(runs) and total > 0:
        return sum(length * weight for length, weight in weighted) / total
    return None if runs else cell.mean_acceptance_length


def _cells(result: TuneResult) -> list[tuple[int, TuneCell]]:
    """(k, cell) of every started value; value 0 of a plain key is no k=0 point (llama.cpp drafts there)."""
    if result.points:
        raise StepCostError("a grid sweep gives no step-cost model: calibrate one key (k)")
    return [
        (outcome.value, cell)
        for outcome in result.outcomes
        if outcome.started and (outcome.value != 0 or result.zero_is_off)
        for cell in outcome.cells
        if cell.ok
    ]


def _point(k: int, cell: TuneCell, background: float, runs: list[CellRun] | None = None) -> CostPoint | None:
    """One cell (or some of its bursts, a resample) as a point; None without a rate or a length."""
    if runs is None:
        rate, chosen = cell.decode_tokens_per_s, cell.runs
    else:
        rate, chosen = pooled_rate([(a, d) for run in runs for a, d in run.samples]), runs
    length = _length(k, cell, chosen)
    if rate is None or not rate > 0 or length is None or not math.isfinite(rate):
        return None
    return CostPoint(
        k=k,
        concurrency=cell.concurrency + background,
        decode_tokens_per_s=rate,
        mean_length=max(1.0, length),
        rounds=len(chosen) or None,
    )


def points_from_tune(result: TuneResult, background: float = 0.0) -> list[CostPoint]:
    """Every measured cell as a point (speculation off: length 1; a cell without its length is left out)."""
    return [point for k, cell in _cells(result) if (point := _point(k, cell, background)) is not None]


@dataclass(frozen=True)
class BurstSpread:
    """The pooled sd of a burst's log step time around its cell's mean, and its degrees of freedom."""

    sd: float
    df: int


def burst_spread(result: TuneResult) -> BurstSpread | None:
    """The spread of a calibration's bursts; None when no cell was measured twice (no degrees of freedom)."""
    squares, df = 0.0, 0
    for k, cell in _cells(result):
        logs = [math.log(point.step_s) for run in cell.runs if (point := _point(k, cell, 0.0, [run]))]
        if len(logs) >= 2:
            mean = sum(logs) / len(logs)
            squares += sum((value - mean) ** 2 for value in logs)
            df += len(logs) - 1
    return BurstSpread(math.sqrt(squares / df), df) if df else None


def student_t_quantile(df: int) -> float:
    """Student's t two-sided 95% quantile (its 97.5th percentile) for `df` >= 1 degrees of freedom."""
    if df <= len(T_975):
        return T_975[max(1, df) - 1]
    return 1.95996 + 2.37 / df  # within 0.1% of the exact figure beyond 30


def replicate_points(
    points: list[CostPoint], spread: BurstSpread, *, resamples: int = RESAMPLES, seed: int = 0
) -> list[list[CostPoint]]:
    """The points as a repeat of the calibration could have measured them, `resamples` times: each step time
    moved by its standard error times a Student-t draw (the spread itself is known from few bursts)."""
    rng = random.Random(seed)

    def moved(point: CostPoint) -> CostPoint:
        scale = spread.sd / math.sqrt(point.rounds or 1)
        draw = rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate(spread.df / 2, 2.0) / spread.df)
        step = point.step_s * math.exp(draw * scale)
        return point.model_copy(update={"decode_tokens_per_s": point.mean_length / step})

    return [[moved(point) for point in points] for _ in range(resamples)]


def model_from_tune(result: TuneResult, calibration: Calibration, source: str | None = None) -> StepCostModel:
    """A finished tune's step-cost model with its replicate refits and point spreads; StepCostError."""
    points = points_from_tune(result, calibration.background)
    cost, load_dependent, residual = fit(points)
    replicates = []
    spread = burst_spread(result)
    if spread is not None:
        t = student_t_quantile(spread.df)
        points = [
            point.model_copy(update={"spread": math.exp(t * spread.sd / math.sqrt(point.rounds or 1)) - 1.0})
            for point in points
        ]
        replicates = fit_replicates(replicate_points(points, spread), load_dependent)[:KEPT_REPLICATES]
    return StepCostModel(
        endpoint=calibration.endpoint,
        model=calibration.model,
        settings=calibration.settings,
        key=result.key,
        fitted_at=result.started_at,
        source=source,
        cost=cost,
        load_dependent=load_dependent,
        k_range=(min(p.k for p in points), max(p.k for p in points)),
        loads=sorted({p.concurrency for p in points}),
        residual=residual,
        caveat=caveat(points, load_dependent, residual, cost),
        points=points,
        replicates=replicates,
    )


async def plan_calibration(
    options: TuneOptions, *, values_given: bool, loads_given: bool
) -> tuple[TuneOptions, Calibration, str]:
    """The tune's options for a calibration (values around the file's k, the live loads, short bursts
    unless given), what the model will be keyed by, and a line saying what was chosen and why."""
    from tui.telemetry.monitor import fetch_model_ids

    async with client_or_own(None) as client:
        model = options.model
        if not model:  # the first model the server lists: what the burst uses by default
            ids = await fetch_model_ids(client, options.endpoint, headers={}, timeout_s=5.0)
            model = ids[0] if isinstance(ids, list) and ids else None
        calibration = await read_calibration(options.config_file, options.endpoint, options.key, model)
        scrapes = 2 if loads_given else LIVE_SCRAPES
        live_running, token_s = await live_load(client, options.resolved_metrics_url, scrapes=scrapes)
    running = None if loads_given else live_running
    values = (
        options.values if values_given else calibration_values(calibration.current_k, calibration.zero_is_off)
    )
    loads = options.concurrencies if loads_given else calibration_loads(running)
    rounds = max(options.rounds, CALIBRATION_ROUNDS)
    changed = replace(options, values=tuple(values), concurrencies=tuple(loads), rounds=rounds)
    calibration = replace(calibration, background=running or 0.0)
    seen = "no load seen" if running is None else f"{fmt_count(round(running, 1))} running"
    restarts = rounds * len(values)
    took = calibration_time_s(changed, token_s)
    time = (
        f"its time known after the first burst (no live time per token), plus {restarts} restarts"
        if took is None or token_s is None
        else f"about {fmt_duration(took)} of bursts at the live {fmt_latency(token_s)} per token, "
        f"plus {restarts} restarts"
    )
    line = (
        f"calibrating the step cost of {calibration.endpoint} ({model or 'model unknown'}): "
        f"k={','.join(map(str, values))} at concurrency {','.join(map(str, loads))}, "
        f"{rounds} rounds ({seen} live): {time}"
    )
    return changed, calibration, line


def fit_and_keep(
    result: TuneResult, calibration: Calibration, source: str | None, path: Path | None = None
) -> tuple[StepCostModel | None, str]:
    """The fitted model (returned even when it cannot be written; None: not fitted) and a line saying so."""
    try:
        model = model_from_tune(result, calibration, source)
    except StepCostError as error:
        return None, f"no step-cost model kept: {error}"
    try:
        where = save_model(model, path)
    except (StepCostError, OSError) as error:
        return model, f"the step-cost model could not be kept: {error}"
    cost = model.cost
    scope = "" if model.load_dependent else f" (at load {fmt_count(round(model.loads[0], 1))} only)"
    spread = model.spread
    measured = "" if spread is None else f", points measured within ±{fmt_rate(spread)}"
    return model, (
        f"step-cost model kept in {where}: step {fmt_latency(cost.base_s)}"
        f" + {fmt_latency(cost.per_seq_s)}/seq"
        f" + on ({fmt_latency(cost.on_s)} + {fmt_latency(cost.on_seq_s)}/seq)"
        f" + k·({fmt_latency(cost.per_draft_s)} + {fmt_latency(cost.per_draft_seq_s)}/seq){scope}, "
        f"fit within {fmt_rate(model.residual)}{measured}"
    )


SIM_KS = range(0, 7)
SIM_LOADS = (1, 4, 16)


def sim_step_cost(config_file: Path, url: str) -> StepCostModel | None:
    """What a calibration of the sim at `url` would fit, from its speed model (None: not a sim config)."""
    try:
        config = load_sim_config(config_file)
    except (SimConfigError, OSError):
        return None
    behaviour = Behaviour.from_config(config)
    points = []
    for k in SIM_KS:
        length = 1.0 + 0.5 * k  # any length: the points carry the step time (length / rate)
        for load in SIM_LOADS:
            step = behaviour.decode_step_s(load, k) / behaviour.speed
            points.append(
                CostPoint(k=k, concurrency=load, decode_tokens_per_s=length / step, mean_length=length)
            )
    cost, dependent, residual = fit(points)
    return StepCostModel(
        endpoint=endpoint_key(url),
        model=None,
        settings=None,
        key="speculative.num_speculative_tokens",
        fitted_at=datetime.now(UTC),
        source=SIM_SOURCE,
        cost=cost,
        load_dependent=dependent,
        k_range=(min(SIM_KS), max(SIM_KS)),
        loads=list(map(float, SIM_LOADS)),
        residual=residual,
        points=points,
    )
