"""The step-cost model of a simulator, from its own speed model: what a calibration of it would fit.

`spectop demo` gives its dashboard these (kept in memory, never written to the data folder), so the
advisor has a model from the first poll; `basis` says it is the simulator's, not a measurement.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tui.advice.stepcost import SIM_SOURCE, CostPoint, StepCostModel, endpoint_key, fit
from tui.sim.behaviour import Behaviour
from tui.sim.config import SimConfigError, load_sim_config

KS = range(0, 7)
LOADS = (1, 4, 16)


def sim_step_cost(config_file: Path, url: str) -> StepCostModel | None:
    """The model of the sim serving `config_file` at `url` (None when the file is not a sim config)."""
    try:
        config = load_sim_config(config_file)
    except (SimConfigError, OSError):
        return None
    behaviour = Behaviour.from_config(config)
    points = []
    for k in KS:
        length = 1.0 + 0.5 * k  # any length: the points carry the step time (length / rate)
        for load in LOADS:
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
        k_range=(min(KS), max(KS)),
        loads=list(map(float, LOADS)),
        residual=residual,
        points=points,
    )
