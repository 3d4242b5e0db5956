"""The advisor on live figures: one endpoint's (or a fleet group's) window, the kept step-cost models and
the kept tunes' context stops. `advice_for` serves `spectop snapshot` and the dashboard; `AdviceBook` is
the dashboard's state."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path

from tui.advice.advisor import DEFAULT_MARGIN, Advice, AdviceTracker, advise, alert_text
from tui.advice.stepcost import (
    StepCostError,
    StepCostFile,
    StepCostModel,
    config_facts,
    endpoint_key,
    find_model,
    load_models,
)
from tui.configs.errors import ConfigError
from tui.configs.spec_table import VLLM_DEFAULT_MAX_NUM_SEQS, k_for_batch, table_from_steps, table_text
from tui.format import fmt_count, fmt_times, fmt_tokens
from tui.telemetry.figures import Figures

VLLM_KEY = "speculative.num_speculative_tokens"  # the only key whose schedule an engine takes as a table


@dataclass(frozen=True)
class TableOffer:
    table: list[list[int]]
    words: str  # "batch 1: k=3, 2-256: k=1 (k=3 1.21x over k=1 at load 1; k=1 1.15x over k=3 at load 8)"

    @property
    def ranges(self) -> str:
        """ "1: k=3, 2-256: k=1": the advice line's words for the table."""
        return table_text([(lo, hi, k) for lo, hi, k in self.table]).removeprefix("batch ")


def _beats(advice: Advice, k: int, other: int) -> float | None:
    """k's speed over `other`'s at this advice's load, when it clears the advice's threshold."""
    mine, theirs = advice.speedup_by_k.get(k), advice.speedup_by_k.get(other)
    if mine is None or not theirs:
        return None
    ratio = mine / theirs
    return ratio if ratio > 1.0 + advice.threshold else None


def table_offer(
    per_position: list[float] | None,
    current_k: int | None,
    model: StepCostModel | None,
    *,
    top: int = VLLM_DEFAULT_MAX_NUM_SEQS,
    margin: float = DEFAULT_MARGIN,
) -> TableOffer | None:
    """The table the model's calibrated loads call for, or None (no model measured over loads, no best k
    at some load, one k best everywhere, or a change of k within noise)."""
    if model is None or not model.load_dependent or not per_position:
        return None
    loads = sorted({max(1, round(load)) for load in model.loads})
    bests: list[tuple[int, int, Advice]] = []
    for load in loads:
        advice = advise(per_position, current_k, float(load), model, margin=margin)
        if advice.best_k is None:
            return None
        bests.append((load, advice.best_k, advice))
    if len({k for _, k, _ in bests}) < 2:
        return None
    reasons = []
    for (low, low_k, low_advice), (high, high_k, high_advice) in itertools.pairwise(bests):
        if low_k == high_k:
            continue
        below, above = _beats(low_advice, low_k, high_k), _beats(high_advice, high_k, low_k)
        if below is None or above is None:  # one of the two k is within noise of the best at both loads
            return None
        reasons.append(f"k={low_k} {fmt_times(below)} over k={high_k} at load {fmt_count(low)}")
        reasons.append(f"k={high_k} {fmt_times(above)} over k={low_k} at load {fmt_count(high)}")
    # the same k over consecutive loads is one step; the last runs beyond every load
    steps: list[tuple[int, int | None]] = [
        (k, [*group][-1][0]) for k, group in itertools.groupby(bests, lambda b: b[1])
    ]
    table = table_from_steps([*steps[:-1], (steps[-1][0], None)], max(top, loads[-1]))
    return TableOffer(table, f"{table_text([(lo, hi, k) for lo, hi, k in table])} ({'; '.join(reasons)})")


@dataclass(frozen=True)
class ContextFinding:
    """From a kept tune: at `concurrency`, speculation off wins from `prompt_tokens` on (significantly)."""

    endpoint: str  # host:port
    concurrency: int
    prompt_tokens: int
    pays_up_to: int | None
    tuned_at: datetime


def read_context_findings(folder: Path | None = None) -> tuple[ContextFinding, ...]:
    """Every kept tune's significant context stops, newest first (an unreadable tune is skipped)."""
    # lazy: the tune's and the bursts' report modules are 35 ms of imports, +9% on the first frame
    from tui.bench.burst_store import BurstFileError
    from tui.tune.result import list_tunes, load_tune

    found = []
    for path in list_tunes(folder):
        try:
            result = load_tune(path)
        except BurstFileError:
            continue
        key = endpoint_key(result.endpoint)
        found += [
            ContextFinding(key, stop.concurrency, stop.prompt_tokens, stop.pays_up_to, result.started_at)
            for stop in result.context_stops
            if stop.significant and stop.prompt_tokens is not None
        ]
    return tuple(found)


def context_words(
    findings: tuple[ContextFinding, ...], url: str, prompt_tokens: float | None, running: float | None
) -> str | None:
    """ "at this context (18,432 prompt tokens), k=0: speculation stops paying from 16,384 at c=1 (tune
    2026-12-05)" when the window's prompts reach the newest tune's stop; else None."""
    key = endpoint_key(url)
    mine = [finding for finding in findings if finding.endpoint == key]
    if prompt_tokens is None or not mine:
        return None
    newest = max(finding.tuned_at for finding in mine)
    load = max(1.0, running or 0.0)
    finding = min(
        (f for f in mine if f.tuned_at == newest), key=lambda f: (abs(f.concurrency - load), f.concurrency)
    )
    if prompt_tokens < finding.prompt_tokens:
        return None
    return (
        f"at this context ({fmt_tokens(prompt_tokens)} prompt tokens), k=0: speculation stops paying from "
        f"{fmt_tokens(finding.prompt_tokens)} at c={finding.concurrency} (tune {finding.tuned_at:%Y-%m-%d})"
    )


@dataclass(frozen=True)
class Advised:
    """For the guard: the better k held for `sustained_s`, this window's better k, the current k, words."""

    held_k: int | None = None
    now_k: int | None = None
    current_k: int | None = None
    words: str = ""


@dataclass(frozen=True)
class KeptModels:
    """The step-cost models as read at start, or why they could not be read."""

    models: StepCostFile = field(default_factory=StepCostFile)
    problem: str | None = None
    contexts: tuple[ContextFinding, ...] = ()  # the kept tunes' context stops


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
        figures.per_position_acceptance, current_k, figures.running, model, model_note=note, margin=margin
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
    table: list[list[int]] | None = None  # vLLM's k by batch size


def k_in_effect(k: int | None, table: list[list[int]] | None, running: float | None) -> int | None:
    """The k a file with `k` and `table` drafts at `running` requests (vLLM clamps each range's k to k)."""
    if not table or k is None or not running:
        return k
    return k_for_batch([(lo, hi, each) for lo, hi, each in table], max(1, round(running)), k)


async def read_config_facts(path: Path) -> ConfigFacts:
    """The k and the settings digest of a config file (unknown when it does not read or has no k)."""
    from tui.configs.editing import open_config_async

    try:
        opened = await open_config_async(path)
    except ConfigError:
        return ConfigFacts(None, None)
    if opened.document is None:
        return ConfigFacts(None, None)
    from tui.configs.sglang_adaptive import candidate_steps
    from tui.tune.plan import file_table

    k, digest, key = config_facts(opened.document)
    return ConfigFacts(k, digest, key, candidate_steps(opened.document.data), file_table(opened.document))


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
        """Take one reading; the alert text while another k has stayed better for `sustained_s`."""
        if not up or figures is None or url is None:
            self.latest.pop(name, None)
            self._deferred.pop(name, None)
            return self.tracker.observe(name, None, now)
        facts = self.facts.get(name)
        settings = facts.settings if facts else None
        k = k_in_effect(facts.k, facts.table, figures.running) if facts else None
        advise_now = partial(
            advice_for, figures, url, model, self.kept, settings=settings, current_k=k, margin=self.margin
        )
        if find_model(self.kept.models, url, model, settings)[0] is None:
            # No step-cost model: no other k can be advised, so the advice (the lengths by k the detail
            # shows) is worked out when asked, not for each of a fleet's instances at every refresh.
            self.latest.pop(name, None)
            self._deferred[name] = advise_now
            return self.tracker.observe(name, None, now)
        self._deferred.pop(name, None)
        advice, offer = advise_now(), self.table_offer(name, url, model, figures)
        if offer is not None:  # one k does not fit every calibrated load
            advice = replace(advice, table=offer.ranges)
        self.latest[name] = advice
        return self.tracker.observe(name, advice, now)

    def table_offer(self, name: str, url: str, model_name: str | None, figures: Figures) -> TableOffer | None:
        """The k by batch size for one endpoint (vLLM files only: their config's key takes a table)."""
        facts = self.facts.get(name)
        if facts is None or facts.key != VLLM_KEY:
            return None
        model, _ = find_model(self.kept.models, url, model_name, facts.settings)
        k = k_in_effect(facts.k, facts.table, figures.running)
        offer = table_offer(figures.per_position_acceptance, k, model, margin=self.margin)
        return None if offer is None or offer.table == facts.table else offer

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
        """A model calibrated while running: replaces the kept one of the same identity from now on."""
        others = [m for m in self.kept.models.models if m.identity != model.identity]
        self.kept = KeptModels(StepCostFile(models=[*others, model]), self.kept.problem)

    def sustained_better(self, name: str, now: float) -> Advised:
        """The advice as the guard needs it now (`Advised`)."""
        advice = self.advice(name)
        if advice is None:
            return Advised()
        held_s = self.tracker.held_s(name, advice, now)
        if held_s is None:
            return Advised(None, advice.better_k, advice.current_k, advice.line())
        return Advised(advice.better_k, advice.better_k, advice.current_k, alert_text(advice, held_s))
