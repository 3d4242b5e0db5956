"""The advisor on live figures: one endpoint's (or a fleet group's) window and the kept step-cost models.

`advice_for` is what `spectop snapshot` (direct and fleet) and the dashboard call with a window's
figures. `AdviceBook` is the dashboard's per-endpoint state: the models (read once at start), what each
endpoint's config file says (its k and settings digest, read by the app off the event loop), the latest
advice and the sustained "another k is better" condition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from tui.advice.advisor import DEFAULT_MARGIN, Advice, AdviceTracker, advise, alert_text
from tui.advice.context import ContextFinding, context_words, read_context_findings
from tui.advice.guard_table import VLLM_KEY, TableOffer, table_offer
from tui.advice.stepcost import StepCostError, StepCostFile, StepCostModel, find_model, load_models
from tui.telemetry.figures import Figures


@dataclass(frozen=True)
class Advised:
    """The advisor's word for the guard: the better k held for `sustained_s` (None: none), the better k
    of the current window alone, the k the server runs, and the words."""

    held_k: int | None = None
    now_k: int | None = None
    current_k: int | None = None
    words: str = ""


@dataclass(frozen=True)
class KeptModels:
    """The step-cost models as read at start, or why they could not be read."""

    models: StepCostFile = field(default_factory=StepCostFile)
    problem: str | None = None
    contexts: tuple[ContextFinding, ...] = ()  # the kept tunes' context stops (tui/advice/context.py)


def read_models(path: Path | None = None) -> KeptModels:
    contexts = read_context_findings()
    try:
        return KeptModels(load_models(path), contexts=contexts)
    except StepCostError as error:
        return KeptModels(problem=str(error), contexts=contexts)


def advice_for(
    figures: Figures,
    url: str,
    model_name: str | None,
    kept: KeptModels,
    *,
    settings: str | None = None,
    current_k: int | None = None,
    margin: float = DEFAULT_MARGIN,
) -> Advice:
    """The advice for one window of figures of the server at `url` (its settings digest when known)."""
    model, note = find_model(kept.models, url, model_name, settings)
    if kept.problem is not None:
        note = f"step-cost models unreadable ({kept.problem})"
    advice = advise(
        figures.per_position_acceptance,
        current_k,
        figures.running,
        model,
        model_note=note,
        margin=margin,
    )
    context = context_words(kept.contexts, url, figures.prompt_tokens_mean, figures.running)
    return advice if context is None else replace(advice, context=context)


@dataclass(frozen=True)
class ConfigFacts:
    """What an endpoint's config file says, for the advisor: its k and its settings digest."""

    k: int | None
    settings: str | None
    key: str | None = None
    adaptive_steps: tuple[int, ...] | None = None  # SGLang's adaptive tiers (tui/configs/sglang_adaptive.py)


async def read_config_facts(path: Path) -> ConfigFacts:
    """The k and the settings digest of a config file (unknown when it does not read or has no k)."""
    from tui.advice.stepcost import config_facts
    from tui.configs.editing import open_config_async
    from tui.configs.errors import ConfigError

    try:
        opened = await open_config_async(path)
    except ConfigError:
        return ConfigFacts(None, None)
    if opened.document is None:
        return ConfigFacts(None, None)
    from tui.configs.sglang_adaptive import candidate_steps

    k, digest, key = config_facts(opened.document)
    return ConfigFacts(k, digest, key, candidate_steps(opened.document.data))


@dataclass
class AdviceBook:
    """The dashboard's advice per endpoint, and the sustained condition for the alert."""

    kept: KeptModels
    sustained_s: float
    margin: float = DEFAULT_MARGIN
    facts: dict[str, ConfigFacts] = field(default_factory=dict)
    latest: dict[str, Advice] = field(default_factory=dict)
    tracker: AdviceTracker = field(init=False)
    _deferred: dict[str, Callable[[], Advice]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.tracker = AdviceTracker(self.sustained_s)

    def observe(
        self, name: str, url: str | None, model: str | None, figures: Figures | None, up: bool, now: float
    ) -> str | None:
        """One reading: the new advice; the alert text while another k has stayed better for
        `sustained_s` (None: no such condition)."""
        if not up or figures is None or url is None:
            self.latest.pop(name, None)
            self._deferred.pop(name, None)
            return self.tracker.observe(name, None, now)
        facts = self.facts.get(name)
        settings = facts.settings if facts else None
        advise_now = partial(
            advice_for,
            figures,
            url,
            model,
            self.kept,
            settings=settings,
            current_k=facts.k if facts else None,
            margin=self.margin,
        )
        if find_model(self.kept.models, url, model, settings)[0] is None:
            # No step-cost model: no other k can be advised, so the advice (the lengths by k the detail
            # shows) is worked out when asked, not for each of a fleet's instances at every refresh.
            self.latest.pop(name, None)
            self._deferred[name] = advise_now
            return self.tracker.observe(name, None, now)
        self._deferred.pop(name, None)
        advice = self.latest[name] = self._with_table(advise_now(), name, url, model, figures)
        return self.tracker.observe(name, advice, now)

    def _with_table(self, advice: Advice, name: str, url: str, model: str | None, figures: Figures) -> Advice:
        """The advice with the k by batch size, where one k does not fit every calibrated load."""
        offer = self.table_offer(name, url, model, figures)
        return advice if offer is None else replace(advice, table=offer.ranges)

    def table_offer(self, name: str, url: str, model_name: str | None, figures: Figures) -> TableOffer | None:
        """The k by batch size for one endpoint (vLLM files only: their config's key takes a table)."""
        facts = self.facts.get(name)
        if facts is None or facts.key != VLLM_KEY:
            return None
        model, _ = find_model(self.kept.models, url, model_name, facts.settings)
        return table_offer(figures.per_position_acceptance, facts.k, model, margin=self.margin)

    def adaptive_steps(self, name: str) -> tuple[int, ...] | None:
        """The endpoint's adaptive tiers from its config file (SGLang `speculative_adaptive`), or None."""
        facts = self.facts.get(name)
        return facts.adaptive_steps if facts else None

    def advice(self, name: str) -> Advice | None:
        deferred = self._deferred.pop(name, None)
        if deferred is not None:
            self.latest[name] = deferred()
        return self.latest.get(name)

    def add_model(self, model: StepCostModel) -> None:
        """A calibration made while the dashboard runs: its model counts from the next reading on (it
        replaces a kept one of the same server, model, settings and key, as in the file)."""
        same = (model.endpoint, model.model, model.settings, model.key)
        others = [m for m in self.kept.models.models if (m.endpoint, m.model, m.settings, m.key) != same]
        self.kept = KeptModels(StepCostFile(models=[*others, model]), self.kept.problem)

    def sustained_better(self, name: str, now: float) -> Advised:
        """What the guard needs of the advice now: the better k held for `sustained_s` (or None), the
        better k of this window alone, the current k, and the words."""
        advice = self.advice(name)
        if advice is None:
            return Advised()
        held = self.tracker.since.get(name)
        if held is None or advice.better_k != held[0] or now - held[1] < self.sustained_s:
            return Advised(None, advice.better_k, advice.current_k, advice.line())
        return Advised(held[0], advice.better_k, advice.current_k, alert_text(advice, now - held[1]))
