"""One rule for a request's acceptance and mean acceptance length, whether read from the server's
response (`ServerFigures`) or explained (`RequestFigures`, and pooled over an arm)."""

from __future__ import annotations

import pytest

from tui.bench import explain
from tui.bench.server_figures import ServerFigures, acceptance_rate, mean_acceptance_length

CASES = [  # (accepted, drafted, steps)
    (30, 40, 20),
    (0, 40, 20),
    (0, 0, 0),  # nothing drafted: unknown, not 0%
    (None, 40, 20),
    (30, None, None),
    (30, 40, None),  # no step count: no mean length
]


@pytest.mark.parametrize(("accepted", "drafted", "steps"), CASES)
def test_server_and_explained_figures_derive_alike(
    accepted: int | None, drafted: int | None, steps: int | None
) -> None:
    server = ServerFigures(accepted=accepted, drafted=drafted, spec_steps=steps)
    request = explain.RequestFigures(ok=True, accepted=accepted, drafted=drafted, spec_steps=steps)
    assert server.acceptance_rate == request.acceptance_rate == acceptance_rate(accepted, drafted)
    assert server.mean_acceptance_length == request.mean_acceptance_length
    assert request.mean_acceptance_length == mean_acceptance_length(accepted, steps)


def test_the_rules_themselves() -> None:
    assert acceptance_rate(30, 40) == 0.75
    assert acceptance_rate(0, 40) == 0.0  # drafted and none accepted is a known 0
    assert acceptance_rate(0, 0) is None and acceptance_rate(None, 4) is None
    assert mean_acceptance_length(30, 20) == 2.5
    assert mean_acceptance_length(30, 0) is None and mean_acceptance_length(None, 20) is None


def test_an_arm_pools_by_the_same_rule() -> None:
    requests = [
        explain.RequestFigures(ok=True, accepted=30, drafted=40, spec_steps=20),
        explain.RequestFigures(ok=True, accepted=10, drafted=40, spec_steps=20),
    ]
    pooled = explain.acceptance(requests)
    assert pooled.pooled == acceptance_rate(40, 80)
    assert pooled.mean_length == mean_acceptance_length(40, 40)
    nothing = explain.acceptance([explain.RequestFigures(ok=True, accepted=0, drafted=0, spec_steps=0)])
    assert nothing.pooled is None and nothing.mean_length is None
