"""One pydantic model per config kind: types, ranges and one line of help per field. Unknown keys are kept
(reported by `unknown_keys`); the schema says what a server would reject, advice is in `lint`."""

from __future__ import annotations

import difflib
import json
import re
import tomllib
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from tui.configs.document import KeyPath, dotted
from tui.configs.kinds import ConfigKind
from tui.configs.spec_table import TableError, read_table
from tui.format import fmt_setting
from tui.validators import EnvName, WrittenHttpUrl, friendly_message

# vLLM SpeculativeMethod (vllm.md §3.1); every *_mtp is rewritten to "mtp".
VLLM_METHODS = (
    "mtp", "eagle", "eagle3", "draft_model", "ngram", "ngram_gpu", "medusa", "mlp_speculator", "suffix",
    "dflash", "dspark", "custom_class", "extract_hidden_states",
)  # fmt: skip
# SGLang SpeculativeAlgorithm (sglang-server-args.md §A); matching is case-insensitive.
SGLANG_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "FROZEN_KV_MTP")

_SECTION = ConfigDict(extra="allow", strict=True)


class VllmModelSection(BaseModel):
    model_config = _SECTION
    name: str = Field(min_length=1, description="target model: HF repo id or local path (vllm serve MODEL)")
    dtype: Literal["auto", "half", "float16", "bfloat16", "float", "float32"] | None = Field(
        None, description="weight and activation dtype (--dtype); auto = the checkpoint's dtype"
    )
    tensor_parallel_size: int | None = Field(None, ge=1, le=1024, description="GPUs per replica (-tp)")
    max_model_len: int | None = Field(None, ge=1, description="context length in tokens (--max-model-len)")
    gpu_memory_utilization: float | None = Field(
        None, gt=0.0, le=1.0, description="fraction of GPU memory vLLM may use; default 0.92"
    )
    data_parallel_size: int | None = Field(None, ge=1, description="replicas in data parallel (-dp)")
    served_model_name: str | None = Field(None, description="model id in the API and the metrics label")
    trust_remote_code: bool | None = Field(None, description="run the checkpoint's own model code")


class VllmSpeculativeSection(BaseModel):
    model_config = _SECTION
    enabled: bool | None = Field(None, description="speculative decoding on/off (spectop key; off = no -sc)")
    method: str | None = Field(None, description="draft method: mtp (model MTP heads), eagle, ngram ...")
    model: str | None = Field(None, description="draft model; leave empty for mtp (the target drafts itself)")
    num_speculative_tokens: int | None = Field(None, ge=1, le=16, description="draft tokens per step")
    acceptance_threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="spectop alerts when acceptance stays below this"
    )
    draft_tensor_parallel_size: int | None = Field(None, ge=1, description="TP size of the draft")
    num_speculative_tokens_per_batch_size: list[list[int]] | dict[str, int] | None = Field(
        None,
        description="k by batch size: [[lo, hi, k], ...] inclusive, k=0 = off (num_speculative_tokens = max)",
    )
    rejection_sample_method: str | None = Field(None, description="standard (default), block or synthetic")
    synthetic_acceptance_rates: list[float] | None = Field(
        None, description="benchmarking only: fakes acceptance (needs rejection_sample_method synthetic)"
    )
    synthetic_acceptance_length: float | None = Field(None, ge=1.0, description="benchmarking only, as above")

    @field_validator("num_speculative_tokens_per_batch_size", mode="before")
    @classmethod
    def _table_shape(cls, value: Any) -> Any:
        if value is not None:
            try:
                read_table(value)
            except TableError as error:
                raise ValueError(str(error)) from None
        return value

    @field_validator("method")
    @classmethod
    def _known_method(cls, value: str | None) -> str | None:
        if value is None or value in VLLM_METHODS or value.endswith("_mtp"):
            return value
        expected = ", ".join(VLLM_METHODS)
        raise ValueError(f"unknown vLLM speculative method {value!r}: expected one of {expected}")


class VllmCacheSection(BaseModel):
    model_config = _SECTION
    enable_prefix_caching: bool | None = Field(None, description="reuse KV blocks of shared prompt prefixes")
    block_size: int | None = Field(None, ge=1, le=256, description="tokens per KV block (16 on CUDA)")
    kv_cache_dtype: str | None = Field(None, description="KV cache dtype: auto, fp8, ...")


class VllmSchedulerSection(BaseModel):
    model_config = _SECTION
    max_num_seqs: int | None = Field(None, ge=1, description="max concurrent sequences per step")
    max_num_batched_tokens: int | None = Field(None, ge=1, description="token budget per engine step")
    chunked_prefill: bool | None = Field(None, description="split long prompts across steps")


class VllmConfig(BaseModel):
    model_config = _SECTION
    model: VllmModelSection
    speculative: VllmSpeculativeSection | None = None
    cache: VllmCacheSection | None = None
    scheduler: VllmSchedulerSection | None = None
    sim: dict[str, Any] | None = Field(None, description="spectop simulator knobs (free-form)")


class SglangConfig(BaseModel):
    model_config = _SECTION
    model_path: str = Field(min_length=1, description="target model: HF repo id or local path (--model-path)")
    tp_size: int | None = Field(None, ge=1, le=1024, description="tensor parallel size (--tp-size)")
    mem_fraction_static: float | None = Field(
        None, gt=0.0, lt=1.0, description="GPU memory fraction for weights + KV pool; default auto"
    )
    speculative_algorithm: str | None = Field(
        None, description="EAGLE, EAGLE3, NEXTN (= EAGLE), STANDALONE, NGRAM, ...; empty = off"
    )
    speculative_draft_model_path: str | None = Field(
        None, description="draft model; not needed for DeepSeek MTP (NextN weights are in the checkpoint)"
    )
    speculative_num_steps: int | None = Field(None, ge=1, description="draft steps per round; empty = auto")
    speculative_eagle_topk: int | None = Field(None, ge=1, description="branches per draft step; 1 = chain")
    speculative_num_draft_tokens: int | None = Field(
        None, ge=2, description="verify tokens per round; forced to steps + 1 when topk = 1"
    )
    speculative_adaptive: bool | None = Field(
        None, description="adaptive draft steps (EAGLE, topk 1): the server moves between candidate steps"
    )
    speculative_adaptive_config: str | None = Field(
        None, description="JSON file: candidate_steps, ema_alpha, warmup_batches, update_interval, thresholds"
    )
    speculative_accept_threshold_single: float | None = Field(
        None, ge=0.0, le=1.0, description="accept a draft token above this target probability (hot-updatable)"
    )
    speculative_accept_threshold_acc: float | None = Field(
        None, gt=0.0, le=1.0, description="accept probability p becomes min(1, p / this) (hot-updatable)"
    )
    disable_radix_cache: bool | None = Field(None, description="turn off prefix (radix) KV reuse")
    chunked_prefill_size: int | None = Field(None, ge=-1, description="prefill chunk in tokens; -1 disables")
    max_running_requests: int | None = Field(None, ge=1, description="max concurrent requests; 48 with spec")
    enable_metrics: bool | None = Field(None, description="expose /metrics (spectop needs it)")
    pp_size: int | None = Field(None, ge=1, description="pipeline parallel size (not with speculation)")
    enable_dp_attention: bool | None = Field(None, description="data-parallel attention")
    enable_mixed_chunk: bool | None = Field(None, description="mix prefill and decode (forced off by spec)")
    trust_remote_code: bool | None = Field(None, description="run the checkpoint's own model code")
    served_model_name: str | None = Field(None, description="model id in the API and the metrics label")
    context_length: int | None = Field(None, ge=1, description="context length in tokens (default: model's)")
    page_size: int | None = Field(None, ge=1, description="tokens per KV page")
    host: str | None = Field(None, description="listen address (default 127.0.0.1)")
    port: int | None = Field(None, ge=1, le=65535, description="listen port (default 30000)")

    sim: dict[str, Any] | None = Field(None, description="spectop simulator knobs (free-form)")

    @field_validator("speculative_algorithm")
    @classmethod
    def _known_algorithm(cls, value: str | None) -> str | None:
        if value is None or value.upper() in SGLANG_ALGORITHMS:
            return value
        hint = " (SGLang has no MTP algorithm: use EAGLE, or its alias NEXTN, for DeepSeek MTP)"
        raise ValueError(
            f"unknown speculative algorithm {value!r}: expected one of {', '.join(SGLANG_ALGORITHMS)}"
            + (hint if "MTP" in value.upper() else "")
        )


class ClientConfig(BaseModel):
    model_config = _SECTION
    base_url: WrittenHttpUrl = Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    api_key_env: EnvName | None = Field(None, description="NAME of the env variable with the API key")
    model: str | None = Field(None, description="model id sent with each request")
    timeout: float | None = Field(None, gt=0.0, description="request timeout in seconds; 120 suits MTP")
    max_retries: int | None = Field(None, ge=0, le=10, description="retries per request; > 3 risks storms")
    stream: bool | None = Field(None, description="stream tokens (needed to measure TTFT)")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: int | None = Field(None, ge=1, description="output token limit per request")
    extra_body: dict[str, Any] | None = Field(None, description="extra request fields (top_p, ...)")


SCHEMAS: dict[str, type[BaseModel]] = {
    "vllm_toml": VllmConfig,
    "sglang_json": SglangConfig,
    "client_json": ClientConfig,
}
# Fields whose content spectop does not interpret: never descended into for unknown keys.
FREE_FORM = {("sim",), ("extra_body",)}


# --- field descriptions for the form and for `set` ---------------------------------------------------------

# "literal": a list or table edited as one TOML/JSON literal in the form ("table": not in the form).
FieldType = Literal["bool", "int", "float", "str", "choice", "literal", "table"]


@dataclass(frozen=True)
class FieldSpec:
    path: KeyPath
    type: FieldType
    help: str
    required: bool = False
    choices: tuple[str, ...] = ()
    range_text: str = ""

    @property
    def key(self) -> str:
        return dotted(self.path)


@dataclass(frozen=True)
class SchemaIssue:
    path: KeyPath
    message: str


def _strip_optional(annotation: Any) -> Any:
    """The type a field holds: without `| None` and without a field type's validators."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            annotation = args[0]
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def _section(info: FieldInfo) -> type[BaseModel] | None:
    """The model of a field that is a section of its own (a TOML table), else None."""
    annotation = _strip_optional(info.annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _bound(value: object) -> str:
    return fmt_setting(value) if isinstance(value, float) else str(value)  # 0.0 → 0, 1.0 → 1


def _range_text(metadata: list[Any]) -> str:
    """The allowed values, said once (descriptions do not repeat them): `[1, 16]`, `(0, 1]`, `>= 1`."""
    bounds = {
        type(item).__name__: _bound(getattr(item, type(item).__name__.lower(), None)) for item in metadata
    }
    low, high = bounds.get("Gt") or bounds.get("Ge"), bounds.get("Lt") or bounds.get("Le")
    low_open, high_open = "Gt" in bounds, "Lt" in bounds
    if low and high:
        return f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low:
        return f"> {low}" if low_open else f">= {low}"
    if high:
        return f"< {high}" if high_open else f"<= {high}"
    return ""


LITERAL_FIELDS = {
    ("speculative", "num_speculative_tokens_per_batch_size"),
    ("speculative", "synthetic_acceptance_rates"),
}
_EXTRA_CHOICES: dict[KeyPath, tuple[str, ...]] = {
    ("speculative", "method"): VLLM_METHODS,
    ("speculative_algorithm",): SGLANG_ALGORITHMS,
}


_SCALAR_TYPES: dict[Any, FieldType] = {bool: "bool", int: "int", float: "float", str: "str"}


def _specs(model: type[BaseModel], prefix: KeyPath) -> list[FieldSpec]:
    specs: list[FieldSpec] = []
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        section = _section(info)
        if section is not None:
            specs.extend(_specs(section, path))
            continue
        annotation = _strip_optional(info.annotation)
        choices: tuple[str, ...] = _EXTRA_CHOICES.get(path, ())
        field_type = _SCALAR_TYPES.get(annotation) or ("literal" if path in LITERAL_FIELDS else "table")
        if get_origin(annotation) is Literal:
            field_type, choices = "choice", tuple(str(arg) for arg in get_args(annotation))
        elif field_type == "str" and choices:
            field_type = "choice"
        range_text = _range_text(info.metadata)
        specs.append(
            FieldSpec(path, field_type, info.description or "", info.is_required(), choices, range_text)
        )
    return specs


def field_specs(kind: ConfigKind) -> list[FieldSpec]:
    """Every known scalar field of a kind, in schema order, sections flattened."""
    return _specs(SCHEMAS[kind], ())


def field_spec(kind: ConfigKind, path: KeyPath) -> FieldSpec | None:
    return next((spec for spec in field_specs(kind) if spec.path == path), None)


def validate_data(kind: ConfigKind, data: dict[str, Any]) -> list[SchemaIssue]:
    """What the schema rejects, one issue per field, in file order of the error locations."""
    try:
        SCHEMAS[kind].model_validate(data)
    except ValidationError as error:
        issues = []
        for detail in error.errors(include_url=False):
            path = tuple(str(part) for part in detail["loc"])
            message = friendly_message(dict(detail))
            if detail["type"] not in ("missing", "value_error"):
                message = f"{message} (got {detail['input']!r})"
            issues.append(SchemaIssue(path, message))
        return issues
    return []


def _unknown(model: type[BaseModel], data: Any, prefix: KeyPath) -> Iterator[KeyPath]:
    for key, value in data.items() if isinstance(data, dict) else ():
        path = (*prefix, key)
        info = model.model_fields.get(key)
        section = None if info is None or path in FREE_FORM else _section(info)
        if info is None:
            yield path
        elif section is not None:
            yield from _unknown(section, value, path)


def section_model(kind: ConfigKind, path: KeyPath) -> type[BaseModel] | None:
    """The schema model of the section at `path` (`()` is the whole file), or None when it is not one."""
    model: type[BaseModel] | None = SCHEMAS[kind]
    for depth, key in enumerate(path):
        info = None if model is None else model.model_fields.get(key)
        model = None if info is None or path[: depth + 1] in FREE_FORM else _section(info)
    return model


def schema_knows(kind: ConfigKind, path: KeyPath) -> bool:
    """Whether the schema has this key (a field, a section, or anything inside a free-form table)."""
    if not path:
        return True
    if any(path[:depth] in FREE_FORM for depth in range(1, len(path))):
        return SCHEMAS[kind].model_fields.get(path[0]) is not None
    parent = section_model(kind, path[:-1])
    return parent is not None and path[-1] in parent.model_fields


def _schema_paths(model: type[BaseModel], prefix: KeyPath) -> Iterator[KeyPath]:
    for name, info in model.model_fields.items():
        yield (*prefix, name)
        section = _section(info)
        if section is not None:
            yield from _schema_paths(section, (*prefix, name))


def _data_paths(data: Any, prefix: KeyPath = ()) -> Iterator[KeyPath]:
    for key, value in data.items() if isinstance(data, dict) else ():
        yield (*prefix, str(key))
        yield from _data_paths(value, (*prefix, str(key)))


SUGGESTION_CUTOFF = 0.8


def did_you_mean(kind: ConfigKind, path: KeyPath, data: dict[str, Any], *, in_file_only: bool = False) -> str:
    """`; did you mean 'a'?` for an error message, or "" when nothing is close: the same key name in another
    section, or a close spelling in the same section; of the schema's keys and the file's (only the file's
    with `in_file_only`)."""
    candidates = list(
        dict.fromkeys([*_data_paths(data), *([] if in_file_only else _schema_paths(SCHEMAS[kind], ()))])
    )
    candidates = [candidate for candidate in candidates if candidate != path]
    last = path[-1].lower()
    same_name = [candidate for candidate in candidates if candidate[-1].lower() == last]
    siblings = {candidate[-1].lower(): candidate for candidate in candidates if candidate[:-1] == path[:-1]}
    spelled = difflib.get_close_matches(last, list(siblings), n=3, cutoff=SUGGESTION_CUTOFF)
    found = same_name + [siblings[name] for name in spelled]
    keys = list(dict.fromkeys(dotted(candidate) for candidate in found))[:3]
    return "; did you mean " + " or ".join(repr(key) for key in keys) + "?" if keys else ""


def unknown_keys(kind: ConfigKind, data: dict[str, Any]) -> list[KeyPath]:
    """Keys spectop does not know: kept in the file as they are, shown as unknown."""
    return list(_unknown(SCHEMAS[kind], data, ()))


_SECRET_NAME = re.compile(r"(api_?key|secret|password|passwd|access_token|auth_token|bearer)$", re.IGNORECASE)


def is_secret_key(path: KeyPath) -> bool:
    """A key whose value looks like a credential: never printed, only masked."""
    return bool(path) and bool(_SECRET_NAME.search(path[-1]))


def shown_value(path: KeyPath, text: str) -> str:
    """`text` for display, masked when the key holds a credential."""
    return "****" if is_secret_key(path) else text


def parse_literal(raw: str, kind: ConfigKind) -> Any:
    """A TOML or JSON literal (by kind), falling back to the plain string."""
    try:
        if kind == "vllm_toml":
            try:
                return tomllib.loads(f"v = {raw}")["v"]
            except tomllib.TOMLDecodeError:
                if not raw.lstrip().startswith("{"):
                    raise
                # the form shows a table as JSON (`{"1-16": 3}`), which TOML writes `{"1-16" = 3}`
        return json.loads(raw)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, RecursionError):
        return raw


def typed_value(raw: str, kind: ConfigKind, path: KeyPath) -> Any:
    """`raw` typed by the schema field at `path` (unknown keys: the literal as written)."""
    spec = field_spec(kind, path)
    value = parse_literal(raw, kind)
    if spec is None:
        return value
    if spec.type in ("str", "choice") and not isinstance(value, str):
        if spec.choices and not isinstance(value, bool | int | float):
            return value
        return raw.strip()
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if spec.type == "float" and kind == "vllm_toml" and is_int:
        return float(value)  # TOML tells 1 from 1.0; JSON numbers stay as typed
    return value
