"""AdviceBook: the advice of an endpoint without a step-cost model is worked out when asked (a fleet of
1,000 instances observes one per instance at every refresh), and reads the same as when worked out at once."""

from __future__ import annotations

import pytest

import tui.advice.live as live_advice
from tests.advice.test_advisor import CONDITIONAL, fitted, unconditional
from tui.advice.live import AdviceBook, ConfigFacts, KeptModels, advice_for
from tui.advice.stepcost import StepCostFile
from tui.telemetry.figures import Figures

URL = "http://127.0.0.1:8000"
FIGURES = Figures(per_position_acceptance=unconditional(CONDITIONAL[:4]), running=1.0, acceptance_rate=0.7)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(str(args[1]))
        return advice_for(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(live_advice, "advice_for", counting)
    return calls


def test_without_a_model_the_advice_is_worked_out_when_asked_and_once(counted: list[str]) -> None:
    book = AdviceBook(KeptModels(), sustained_s=30.0)
    book.facts["e"] = ConfigFacts(4, "s")
    for step in range(100):
        assert book.observe("e", URL, "m", FIGURES, up=True, now=float(step)) is None
    assert counted == []
    advice = book.advice("e")
    assert advice == advice_for(FIGURES, URL, "m", KeptModels(), settings="s", current_k=4)
    assert advice is not None and advice.length_by_k and advice.better_k is None
    assert book.advice("e") is advice and book.sustained_better("e", 100.0).now_k is None
    assert counted == [URL]


def test_the_deferred_advice_is_of_the_newest_reading_and_gone_when_the_endpoint_is_down(
    counted: list[str],
) -> None:
    book = AdviceBook(KeptModels(), sustained_s=30.0)
    newer = Figures(per_position_acceptance=[0.9, 0.8], running=2.0)
    book.observe("e", URL, "m", FIGURES, up=True, now=0.0)
    book.observe("e", URL, "m", newer, up=True, now=2.0)
    advice = book.advice("e")
    assert advice is not None and advice.current_k == 2 and advice.load == 2.0
    book.observe("e", URL, "m", newer, up=False, now=4.0)
    assert book.advice("e") is None
    assert counted == [URL]


def test_with_a_model_the_advice_is_worked_out_at_each_reading_for_the_alert(counted: list[str]) -> None:
    book = AdviceBook(KeptModels(StepCostFile(models=[fitted()])), sustained_s=0.0)
    book.facts["e"] = ConfigFacts(5, "s")
    slow = Figures(per_position_acceptance=[0.9, 0.5, 0.1, 0.05, 0.01], running=1.0)
    first = book.observe("e", URL, "m", slow, up=True, now=0.0)
    second = book.observe("e", URL, "m", slow, up=True, now=1.0)
    assert counted == [URL, URL]
    advice = book.advice("e")
    assert advice is not None and advice.better_k is not None
    assert first is not None and second is not None and f"k={advice.better_k} would be" in second
