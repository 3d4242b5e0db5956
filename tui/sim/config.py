"""The simulator's settings from the files users edit in spectop (a vLLM `config.toml` or an SGLang
`settings.json`, see `sample_configs/`), with an optional `[sim]` section that flags override."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Any, NoReturn

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tui.configs.sglang_adaptive import problems as problems_of
from tui.configs.sglang_adaptive import read_config, sections, tiers
from tui.configs.spec_table import TABLE_KEY, Range, TableError, k_for_batch, read_table, table_problems
from tui.validators import friendly_message

Probability = Annotated[float, Field(ge=0.0, le=1.0)]
DEFAULT_ACCEPTANCE = (0.85, 0.70, 0.55, 0.45, 0.38, 0.32, 0.27, 0.23)


class SimConfigError(ValueError):
    """A config file the simulator cannot use; the message names the file, the field and what was expected."""


class SimStartupError(RuntimeError):
    """The simulated server failed to start (e.g. CUDA OOM from an over-ambitious config)."""


class SimSection(BaseModel):
    """The `[sim]` section: the speed and acceptance model. Every field is optional."""

    model_config = ConfigDict(extra="forbid")

    acceptance: list[Probability] | None = None  # conditional, per draft position (default decaying)
    acceptance_scale: float = Field(default=1.0, ge=0.0, le=2.0)
    content_effect: float = Field(default=1.0, ge=0.0, le=3.0)  # 0 = acceptance ignores content
    step_base_ms: float = Field(default=2.5, gt=0.0)  # decode step time at batch 1, no drafting
    context_half_tokens: float = Field(default=65536.0, ge=0.0)  # acceptance halves here (0: no fall-off)
    context_ms_per_1k: float = Field(default=0.01, ge=0.0)  # per 1k context tokens per verified token
    step_per_seq_ms: float = Field(default=0.1, ge=0.0)  # extra step time per running sequence
    verify_cost_per_draft: float = Field(default=0.35, ge=0.0)  # per-seq cost factor per draft token
    draft_cost_ms: float = Field(default=0.25, ge=0.0)  # draft model cost per draft token per step
    spec_on_cost_ms: float = Field(default=0.8, ge=0.0)  # the step cost of speculation on (any k > 0)
    prefill_base_ms: float = Field(default=2.0, ge=0.0)
    prefill_ms_per_token: float = Field(default=0.01, ge=0.0)
    spec_prefill_overhead: float = Field(default=0.12, ge=0.0)  # extra TTFT fraction with drafting
    kv_cache_tokens: int | None = Field(default=None, gt=0)
    draft_memory_per_token: float = Field(default=0.02, ge=0.0)  # GPU memory per draft token (the OOM rule)
    speed: float = Field(default=1.0, gt=0.0)
    seed: int = 0
    log_interval_s: float = Field(default=10.0, gt=0.0)
    decode_log_interval: int = Field(default=40, gt=0)
    background_load_rps: float = Field(default=0.0, ge=0.0)


class SimConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = "defaults"
    model: str = "deepseek-ai/DeepSeek-V3"
    served_model_name: str | None = None
    tensor_parallel_size: int = Field(default=1, ge=1)
    max_model_len: int = Field(default=32768, gt=16)
    gpu_memory_utilization: float = Field(default=0.85, gt=0.0, le=1.0)
    spec_enabled: bool = True
    spec_method: str = "mtp"
    num_speculative_tokens: int = Field(default=2, ge=0, le=32)
    spec_table: list[tuple[int, int, int]] | None = Field(
        default=None, description="vLLM's num_speculative_tokens_per_batch_size: (lo, hi, k) ranges"
    )
    num_draft_tokens: int | None = None  # SGLang's speculative_num_draft_tokens, for the accept-rate formula
    adaptive: dict[str, dict[str, Any]] | None = Field(
        default=None, description="SGLang's adaptive steps: its config's sections (tui/sim/behaviour.py)"
    )
    adaptive_start: int | None = None  # speculative_num_steps under adaptive: the first tier when a candidate
    eagle_topk: int = 1
    max_num_seqs: int = Field(default=64, ge=1)
    enable_prefix_caching: bool = True
    block_size: int = Field(default=16, ge=1)
    chunked_prefill: bool = True
    sim: SimSection = Field(default_factory=SimSection)

    @property
    def k(self) -> int:
        """Draft tokens per step; 0 when speculation is off."""
        return self.num_speculative_tokens if self.spec_enabled else 0

    def k_at(self, batch_size: int) -> int:
        """The k of a step with `batch_size` running sequences: the table's (as vLLM reads it), else `k`."""
        if not self.spec_enabled or self.spec_table is None:
            return self.k
        return k_for_batch(self.spec_table, batch_size, self.num_speculative_tokens)

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model

    @property
    def draft_memory_need(self) -> float:
        return self.sim.draft_memory_per_token * self.k

    def oom_reason(self) -> str | None:
        """The start-up OOM rule: every draft token needs `draft_memory_per_token` of GPU memory (the draft's
        KV cache and activations), which must fit in the headroom `gpu_memory_utilization` leaves."""
        headroom = 1.0 - self.gpu_memory_utilization
        need = self.draft_memory_need
        if self.k and need > headroom + 1e-9:
            return (
                f"{self.k} draft tokens need {need:.2f} of GPU memory but gpu_memory_utilization="
                f"{self.gpu_memory_utilization:.2f} leaves only {headroom:.2f}"
            )
        return None

    def kv_cache_tokens(self) -> int:
        if self.sim.kv_cache_tokens is not None:
            return self.sim.kv_cache_tokens
        usable = max(0.02, self.gpu_memory_utilization - 0.35 - self.draft_memory_need)
        tokens = int(1_600_000 * usable * self.tensor_parallel_size**0.5)
        return max(self.block_size, tokens - tokens % self.block_size)

    def acceptance(self) -> list[float]:
        """The configured conditional acceptance per position, `k` values long (neutral content)."""
        base = list(self.sim.acceptance) if self.sim.acceptance else list(DEFAULT_ACCEPTANCE)
        while len(base) < self.k:
            base.append(max(0.05, base[-1] * 0.85))
        return [min(1.0, p * self.sim.acceptance_scale) for p in base[: self.k]]


def _expect(source: str, table: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any) -> Any:
    if key not in table:
        return default
    value = table[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, int) and not isinstance(value, bool) and float in kinds:
        return float(value)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise SimConfigError(f"{source}: field {key!r}: expected {kinds[0].__name__}, got {value!r}")
    return value


def _section(source: str, data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise SimConfigError(f"{source}: [{name}] must be a table, got {type(value).__name__}")
    return value


def _from_vllm_toml(source: str, data: dict[str, Any]) -> dict[str, Any]:
    model, spec, cache, sched = (
        _section(source, data, name) for name in ("model", "speculative", "cache", "scheduler")
    )
    table = _spec_table(source, spec)  # off with data parallel > 1, as vLLM does (ranks would diverge)
    return {
        "model": _expect(source, model, "name", str, "deepseek-ai/DeepSeek-V3"),
        "served_model_name": _expect(source, model, "served_model_name", str, None),
        "tensor_parallel_size": _expect(source, model, "tensor_parallel_size", int, 1),
        "max_model_len": _expect(source, model, "max_model_len", int, 32768),
        "gpu_memory_utilization": _expect(source, model, "gpu_memory_utilization", float, 0.92),
        "spec_enabled": _expect(source, spec, "enabled", bool, bool(spec)),
        "spec_method": _expect(source, spec, "method", str, "mtp"),
        "num_speculative_tokens": _expect(source, spec, "num_speculative_tokens", int, 2 if spec else 0),
        "spec_table": table if _expect(source, model, "data_parallel_size", int, 1) <= 1 else None,
        "enable_prefix_caching": _expect(source, cache, "enable_prefix_caching", bool, True),
        "block_size": _expect(source, cache, "block_size", int, 16),
        "max_num_seqs": _expect(source, sched, "max_num_seqs", int, 256),
        "chunked_prefill": _expect(source, sched, "chunked_prefill", bool, True),
    }


def _spec_table(source: str, spec: dict[str, Any]) -> list[Range] | None:
    """The k-by-batch-size table; a table vLLM refuses at start-up stops the simulator alike."""
    if spec.get(TABLE_KEY) is None:
        return None
    try:
        ranges = read_table(spec[TABLE_KEY])
    except TableError as error:
        raise SimConfigError(f"{source}: field {TABLE_KEY!r}: {error}") from None
    refused = [problem.message for problem in table_problems(ranges, None) if problem.severity == "error"]
    if refused:
        raise SimConfigError(f"{source}: field {TABLE_KEY!r}: {refused[0]}")
    return ranges


def _from_sglang_json(source: str, data: dict[str, Any]) -> dict[str, Any]:
    algorithm = _expect(source, data, "speculative_algorithm", (str, type(None)), None)
    steps = _expect(source, data, "speculative_num_steps", int, 3 if algorithm else 0)
    topk = _expect(source, data, "speculative_eagle_topk", int, 1)
    draft_tokens = _expect(source, data, "speculative_num_draft_tokens", int, steps + 1)
    adaptive = _adaptive_sections(source, data) if algorithm else None
    start = steps if "speculative_num_steps" in data else None
    if adaptive is not None:  # the engine drafts up to the largest tier, from `start` or the middle one
        steps = max(tier for settings in adaptive.values() for tier in tiers(settings))
    if topk == 1:
        draft_tokens = steps + 1  # SGLang forces this (and warns) when topk == 1
    return {
        "model": _expect(source, data, "model_path", str, "deepseek-ai/DeepSeek-V3"),
        "served_model_name": _expect(source, data, "served_model_name", str, None),
        "tensor_parallel_size": _expect(source, data, "tp_size", int, 1),
        "max_model_len": _expect(source, data, "context_length", int, 163840),
        "gpu_memory_utilization": _expect(source, data, "mem_fraction_static", float, 0.88),
        "spec_enabled": bool(algorithm) and steps > 0,
        "spec_method": (algorithm or "EAGLE"),
        "num_speculative_tokens": steps,
        "num_draft_tokens": draft_tokens,
        "eagle_topk": topk,
        "adaptive": adaptive,
        "adaptive_start": start if adaptive is not None else None,
        "enable_prefix_caching": not _expect(source, data, "disable_radix_cache", bool, False),
        "block_size": _expect(source, data, "page_size", int, 1),
        "max_num_seqs": _expect(source, data, "max_running_requests", int, 48 if algorithm else 256),
    }


def _adaptive_sections(source: str, data: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """`speculative_adaptive`'s settings (the file of `speculative_adaptive_config`, a relative path read
    beside `source`; the default tiers without one); a file SGLang would refuse stops the simulator alike."""
    if not _expect(source, data, "speculative_adaptive", bool, False):
        return None
    name = _expect(source, data, "speculative_adaptive_config", (str, type(None)), None)
    if not name:
        return {"": {}}
    path = Path(name).expanduser()
    if not path.is_absolute() and source != "defaults":
        path = Path(source).parent / path
    config, why = read_config(path)
    problems = [why] if why else [p for p in problems_of(config) if "unknown key" not in p]
    found = sections(config) if not problems else None
    if found is None:
        raise SimConfigError(f"{source}: field 'speculative_adaptive_config': {problems[0]}")
    return found


def _raise_validation(source: str, error: ValidationError) -> NoReturn:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    raise SimConfigError(f"{source}: field {where!r}: {friendly_message(dict(first))}") from None


def load_sim_config(path: Path | None, overrides: dict[str, Any] | None = None) -> SimConfig:
    """A vLLM-style TOML or SGLang-style JSON file (defaults without one), `overrides` over its `[sim]`."""
    fields: dict[str, Any] = {}
    sim_fields: dict[str, Any] = {}
    if path is not None:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise SimConfigError(f"{source}: cannot read: {error.strerror or error}") from None
        if Path(path).suffix.lower() == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as error:
                raise SimConfigError(f"{source}: line {error.lineno}: invalid JSON: {error.msg}") from None
            if not isinstance(data, dict):
                raise SimConfigError(f"{source}: expected a JSON object at the top level")
            fields = _from_sglang_json(source, data)
        else:
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as error:
                raise SimConfigError(f"{source}: invalid TOML: {error}") from None
            fields = _from_vllm_toml(source, data)
        sim_fields = dict(_section(source, data, "sim"))
        fields = {key: value for key, value in fields.items() if value is not None} | {"source": source}
    sim_fields.update({key: value for key, value in (overrides or {}).items() if value is not None})
    try:
        sim = SimSection(**sim_fields)
    except ValidationError as error:
        _raise_validation(f"{fields.get('source', 'flags')} [sim]", error)
    try:
        return SimConfig(**fields, sim=sim)
    except ValidationError as error:
        _raise_validation(str(fields.get("source", "defaults")), error)
