"""The step-cost model: one decode step's time T = L / (decode tokens/s) as a function of k and the load,
fitted by least squares on relative errors with every term >= 0; kept in `stepcost.json`, one per
(endpoint, model, settings digest with the swept key left out)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError

from tui.bench.stats import percentile_interval
from tui.configs.atomic import file_lock, write_file
from tui.configs.errors import ConfigError
from tui.format import fmt_count, fmt_rate
from tui.paths import step_cost_file

if TYPE_CHECKING:  # tomlkit and the config kinds: for the tuner, not for the dashboard's first frame
    from tui.configs.document import ConfigDocument

FORMAT: Literal["spectop-stepcost/1"] = "spectop-stepcost/1"
SIM_SOURCE = "sim"  # a model computed from a simulator's speed model (`spectop demo`), not measured
MAX_MODELS = 200  # the file stays small: the oldest models beyond this are dropped


class StepCostError(ValueError):
    """A model that cannot be fitted, or a file that cannot be read (the message says which and why)."""


class CostPoint(BaseModel):
    """One measured point: k, the load, and the step time it implies."""

    k: int = Field(ge=0)
    concurrency: float = Field(ge=1)  # the batch: the burst's concurrency plus the live load beside it
    decode_tokens_per_s: float = Field(gt=0)
    mean_length: float = Field(ge=1)
    # relative half-width of the step time's 95% interval over the calibration's resamples (None: unknown)
    spread: float | None = Field(None, ge=0)
    rounds: int | None = None  # the bursts (rounds) the point pools

    @property
    def step_s(self) -> float:
        return self.mean_length / self.decode_tokens_per_s


class StepCost(BaseModel):
    """T(k, c) = base + per_seq·c + [k > 0]·(on + on_seq·c) + k·(per_draft + per_draft_seq·c), in s."""

    base_s: float
    per_seq_s: float = 0.0
    on_s: float = 0.0  # speculation on at all (0 in models fitted before it was a term)
    on_seq_s: float = 0.0
    per_draft_s: float
    per_draft_seq_s: float = 0.0

    def step_s(self, k: int, concurrency: float) -> float | None:
        """The modelled step time; None where the fit gives no positive time (outside its reach)."""
        value = (
            self.base_s
            + self.per_seq_s * concurrency
            + (self.on_s + self.on_seq_s * concurrency if k > 0 else 0.0)
            + k * (self.per_draft_s + self.per_draft_seq_s * concurrency)
        )
        return value if value > 0 and math.isfinite(value) else None


class StepCostModel(BaseModel):
    endpoint: str  # host:port of the server (fleet instances are named so)
    model: str | None = None
    settings: str | None = None  # digest of the config with the swept key left out
    key: str  # the swept key, e.g. speculative.num_speculative_tokens
    fitted_at: datetime
    source: str | None = None  # the tune file it was fitted from
    cost: StepCost
    load_dependent: bool  # fitted over two or more loads (else: at `loads` only)
    k_range: tuple[int, int]
    loads: list[float]
    residual: float = Field(ge=0)  # largest relative error of the fit over its points
    caveat: str | None = None  # why the model cannot predict (too few points for its terms, a wide residual)
    points: list[CostPoint]
    # the fit on replicates of the calibration's points: its measurement uncertainty ([]: unknown, e.g. an
    # older model or the simulator's)
    replicates: list[StepCost] = Field(default_factory=list)

    @property
    def identity(self) -> tuple[str, str | None, str | None, str]:
        """What a kept model is replaced by: the same endpoint, model, settings and key."""
        return self.endpoint, self.model, self.settings, self.key

    def basis(self) -> str:
        """How the advice names it: "tune 2026-12-01 21:04" (or the simulator's own model, in the demo)."""
        if self.source == SIM_SOURCE:
            return "the simulator's step cost"
        return f"tune {self.fitted_at.astimezone():%Y-%m-%d %H:%M}"

    def step_s(self, k: int, concurrency: float) -> float | None:
        return self.cost.step_s(k, concurrency)

    @property
    def spread(self) -> float | None:
        """The widest relative interval of a calibration point's step time (None: not measured)."""
        spreads = [point.spread for point in self.points if point.spread is not None]
        return max(spreads) if spreads else None

    def speed_ratio_interval(
        self, k: int, reference: int, concurrency: float, level: float = 0.95
    ) -> tuple[float, float] | None:
        """The interval of T(reference, c) / T(k, c) over the replicates (None: too few)."""
        if not self.replicates:
            return None
        steps = [
            (cost.step_s(k, concurrency), cost.step_s(reference, concurrency)) for cost in self.replicates
        ]
        ratios = [theirs / mine for mine, theirs in steps if mine is not None and theirs is not None]
        return percentile_interval(ratios, len(self.replicates), level)


class StepCostFile(BaseModel):
    format: Literal["spectop-stepcost/1"] = FORMAT
    models: list[StepCostModel] = Field(default_factory=list)


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    size = len(vector)
    rows = [[*row[:], value] for row, value in zip(matrix, vector, strict=True)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda r: abs(rows[r][column]))
        if abs(rows[pivot][column]) < 1e-12:
            return None
        rows[column], rows[pivot] = rows[pivot], rows[column]
        for r in range(size):
            if r != column:
                factor = rows[r][column] / rows[column][column]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[column], strict=True)]
    return [rows[i][size] / rows[i][i] for i in range(size)]


def _least_squares(features: list[list[float]], targets: list[float]) -> list[float] | None:
    """Relative least squares: each row weighted by 1/target (errors as fractions of the step time)."""
    width = len(features[0])
    normal = [[0.0] * width for _ in range(width)]
    right = [0.0] * width
    for row, target in zip(features, targets, strict=True):
        weight = 1.0 / (target * target)
        for i in range(width):
            right[i] += weight * row[i] * target
            for j in range(width):
                normal[i][j] += weight * row[i] * row[j]
    return _solve(normal, right)


def _relative_error(features: list[list[float]], targets: list[float], solved: list[float]) -> float:
    return sum(
        ((sum(x * c for x, c in zip(row, solved, strict=True)) - target) / target) ** 2
        for row, target in zip(features, targets, strict=True)
    )


def _nonnegative_least_squares(features: list[list[float]], targets: list[float]) -> list[float] | None:
    """Exact non-negative relative least squares: the best fit over every subset of the columns."""
    width = len(features[0])
    best: tuple[float, list[float]] | None = None
    for mask in range(1, 1 << width):
        columns = [i for i in range(width) if mask >> i & 1]
        solved = _least_squares([[row[i] for i in columns] for row in features], targets)
        if solved is None or min(solved) < 0:
            continue
        placed = dict(zip(columns, solved, strict=True))
        full = [placed.get(i, 0.0) for i in range(width)]
        error = _relative_error(features, targets, full)
        if best is None or error < best[0]:
            best = (error, full)
    return None if best is None else best[1]


def _usable(points: Sequence[CostPoint]) -> list[CostPoint]:
    return [point for point in points if math.isfinite(point.step_s) and point.step_s > 0]


# the terms' names, in the order of StepCost's fields
TERMS = ("base_s", "per_seq_s", "on_s", "on_seq_s", "per_draft_s", "per_draft_seq_s")
# A fit further off than this at one of its own points predicts nothing: beyond the point's measured spread
# (its bursts' 95% interval) the step is not this shape; within every point's it is the host's noise, which
# leaves the shape unknown (a busy host's bursts of one k and load can differ by 2x: llama.cpp, load 19 on 2
# cores, gave a 20-45% residual at points each known within ±34-40%).
MAX_RESIDUAL = 0.15


def _terms(usable: Sequence[CostPoint], load_dependent: bool) -> list[str]:
    """The terms the points can fit: the load terms with two loads or more, the on-terms with k = 0
    measured beside k > 0 (without k = 0 the cost of switching on is part of `base`)."""
    ks = {point.k for point in usable}
    switched = 0 in ks and len(ks) >= 2
    return [
        term
        for term in TERMS
        if (load_dependent or not term.endswith("seq_s")) and (switched or not term.startswith("on"))
    ]


def _feature(term: str, point: CostPoint) -> float:
    on = 1.0 if point.k > 0 else 0.0
    return {
        "base_s": 1.0,
        "per_seq_s": point.concurrency,
        "on_s": on,
        "on_seq_s": on * point.concurrency,
        "per_draft_s": float(point.k),
        "per_draft_seq_s": point.k * point.concurrency,
    }[term]


def _fit_cost(usable: Sequence[CostPoint], load_dependent: bool) -> StepCost | None:
    """The fit of the load-dependent form (every term) or of the terms at one load alone."""
    terms = _terms(usable, load_dependent)
    features = [[_feature(term, point) for term in terms] for point in usable]
    solved = _nonnegative_least_squares(features, [point.step_s for point in usable])
    if solved is None:
        return None
    return StepCost.model_validate({"per_draft_s": 0.0, **dict(zip(terms, solved, strict=True))})


def _dependent(usable: Sequence[CostPoint]) -> bool:
    """Two loads or more, and at least as many points as the load-dependent form has terms."""
    return len({p.concurrency for p in usable}) >= 2 and len(usable) >= len(_terms(usable, True))


def fit(points: Sequence[CostPoint]) -> tuple[StepCost, bool, float]:
    """The model, whether it depends on the load, its largest relative residual; StepCostError."""
    usable = _usable(points)
    ks = {point.k for point in usable}
    if len(ks) < 2:
        raise StepCostError(
            f"a step-cost model needs two values of k or more; measured: {sorted(ks) or 'none'}"
        )
    cost = _fit_cost(usable, True) if _dependent(usable) else None
    load_dependent = cost is not None
    cost = cost or _fit_cost(usable, False)
    if cost is None:
        raise StepCostError("the measured points give no step-cost model (singular fit)")
    residual = 0.0
    for point in usable:
        predicted = cost.step_s(point.k, point.concurrency)
        if predicted is None:
            raise StepCostError(
                f"the fit gives no positive step time at k={point.k}, concurrency {point.concurrency}"
            )
        residual = max(residual, abs(predicted - point.step_s) / point.step_s)
    return cost, load_dependent, residual


def caveat(
    points: Sequence[CostPoint], load_dependent: bool, residual: float, cost: StepCost | None = None
) -> str | None:
    """Why a fitted model cannot predict, in words (None: it can). With the fitted `cost`, a residual beyond
    the limit says where and whether it is beyond the point's own measured spread (a wrong shape) or within
    every point's (the host's noise: the fit is unknown, not shown wrong)."""
    usable = _usable(points)
    drafted = sorted({point.k for point in usable if point.k > 0})
    if 0 in {point.k for point in usable} and len(drafted) < 2:
        return (
            f"k=0 and k={drafted[0]} only: the cost of switching speculation on cannot be told from "
            "the cost per draft token (calibrate two values of k above 0)"
        )
    cells = {(point.k, point.concurrency) for point in usable}
    terms = len(_terms(usable, load_dependent))
    if len(cells) < terms:
        return f"{len(cells)} measured points for {terms} step-cost terms"
    if residual <= MAX_RESIDUAL:
        return None
    said = f"the step-cost fit is {fmt_rate(residual)} off at its own points (above {fmt_rate(MAX_RESIDUAL)})"
    if cost is None:
        return said
    worst: tuple[float, CostPoint] | None = None
    for point in usable:
        predicted = cost.step_s(point.k, point.concurrency)
        off = math.inf if predicted is None else abs(predicted - point.step_s) / point.step_s
        if off > max(MAX_RESIDUAL, point.spread or 0.0) and (worst is None or off > worst[0]):
            worst = (off, point)
    if worst is not None:  # off by more than the point's bursts vary: the step is not this shape
        off, point = worst
        where = f"{fmt_rate(off)} at k={point.k}, concurrency {fmt_count(round(point.concurrency, 1))}"
        if point.spread is None:
            return f"{said}: {where}"
        return f"{said}: {where}, beyond the ±{fmt_rate(point.spread)} its bursts vary"
    spread = max(point.spread or 0.0 for point in usable)
    return (
        f"{said}, within the ±{fmt_rate(spread)} the calibration's bursts of one k and load vary: the host's "
        "noise, too wide to tell the model's shape (calibrate with more rounds, or on a quieter host)"
    )


def fit_replicates(resampled: Sequence[Sequence[CostPoint]], load_dependent: bool) -> list[StepCost]:
    """The same form fitted on each resample (those with no fit or fewer than two k left out)."""
    usables = [usable for usable in map(_usable, resampled) if len({point.k for point in usable}) >= 2]
    fits = [_fit_cost(usable, load_dependent and _dependent(usable)) for usable in usables]
    return [cost for cost in fits if cost is not None]


@lru_cache(maxsize=4096)  # asked for every reading: a fleet of 1,000 instances asks 500 times a second
def endpoint_key(url: str) -> str:
    """host:port of a server URL (or of a Prometheus `instance` label, which is already host:port)."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # not a URL (a strange `instance` label): the label itself is the key
        return url.strip().lower()
    if host in ("localhost", "::1"):
        host = "127.0.0.1"
    return f"{host}:{port}"


def settings_digest(doc: ConfigDocument, key_paths: Sequence[tuple[str, ...]]) -> str:
    """A digest of the config's settings with the swept key (and its on/off switches) left out."""
    data = json.loads(json.dumps(doc.data, default=str))
    for path in key_paths:
        node = data
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, dict):
            node.pop(path[-1], None)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def load_models(path: Path | None = None) -> StepCostFile:
    """The kept models; an empty file when there is none. StepCostError names the file and the problem."""
    path = path or step_cost_file()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return StepCostFile()
    except OSError as error:
        raise StepCostError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        return StepCostFile.model_validate_json(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise StepCostError(f"{path}: {where}: {first['msg']}") from None


def save_model(model: StepCostModel, path: Path | None = None) -> Path:
    """Keep `model` in place of the one of its identity (atomic); StepCostError leaves an unreadable file."""
    path = path or step_cost_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):  # two calibrations finishing at once both stay
        others = [old for old in load_models(path).models if old.identity != model.identity]
        models = ([*others, model])[-MAX_MODELS:]
        return write_file(path, StepCostFile(models=models).model_dump_json(indent=1))


def find_model(
    models: StepCostFile, endpoint: str, model: str | None, settings: str | None
) -> tuple[StepCostModel | None, str | None]:
    """The newest model for this server and model, preferring the same settings; and a note why not."""
    key = endpoint_key(endpoint)
    same_server = [
        m for m in models.models if m.endpoint == key and (model is None or m.model in (None, model))
    ]
    if not same_server:
        return None, None
    newest = sorted(same_server, key=lambda m: m.fitted_at)
    if settings is not None:
        matching = [m for m in newest if m.settings in (None, settings)]
        if not matching:
            return None, f"the {newest[-1].basis()} calibration was for other settings"
        return matching[-1], None
    return newest[-1], None


def config_key_paths(key: str) -> list[tuple[str, ...]]:
    """What a digest leaves out for a swept key: the key and the switches a tune writes with it."""
    from tui.tune.plan import SGLANG_ALGORITHM, SGLANG_DRAFT_TOKENS, VLLM_ENABLED, VLLM_TABLE

    paths = [tuple(key.split("."))]
    if key == "speculative.num_speculative_tokens":
        paths += [VLLM_ENABLED, VLLM_TABLE]
    if key == "speculative_num_steps":
        paths += [SGLANG_DRAFT_TOKENS, SGLANG_ALGORITHM]
    return paths


def config_facts(doc: ConfigDocument, key: str | None = None) -> tuple[int | None, str | None, str | None]:
    """(k the file has now, its settings digest, the key) of a config; Nones when it has no such key."""
    from tui.tune.plan import TunePlanError, default_key

    try:
        tune_key = default_key(doc, key)
        k = tune_key.current(doc)
    except (TunePlanError, ConfigError):
        return None, None, None
    return k, settings_digest(doc, config_key_paths(tune_key.name)), tune_key.name
