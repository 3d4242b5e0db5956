"""Lint advice for config documents: each finding has an id, a severity, the line and a fix. Rules: the seed
article's troubleshooting list, checked against seed-summary.md §5, vllm.md §3, sglang-server-args.md §A."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tui.configs import sglang_adaptive
from tui.configs.document import ConfigDocument, KeyPath, dotted
from tui.configs.schemas import did_you_mean, is_secret_key, unknown_keys, validate_data
from tui.configs.spec_table import TABLE_KEY, table_or_none, table_problems
from tui.gpu.alerts import headroom_problems
from tui.gpu.models import GpuSample

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

MAX_USEFUL_DRAFT_TOKENS = 4
SAFE_GPU_MEMORY = 0.85
MIN_STREAM_TIMEOUT_S = 60.0
MAX_SANE_RETRIES = 3
VLLM_DEFAULT_GPU_MEMORY = 0.92  # vllm.md §5: 0.92 since 2026-04-21 (0.9 before)
# Kinds whose memory fraction can be checked against the GPUs of the node (`gpu_findings`).
GPU_CHECKED_KINDS = ("vllm_toml", "sglang_json")

# Model families whose checkpoints ship MTP / NextN heads trained with the target (vllm.md §3.1,
# sglang-server-args.md §A). Matched case-insensitively against the model name.
MTP_FAMILIES = (
    "deepseek-v3", "deepseek-r1", "deepseek-v4", "mimo", "glm-4.5", "glm-4.6", "glm-4.7", "glm-5",
    "qwen3-next", "qwen3.5", "ernie-4.5", "longcat", "kimi-k2", "step3", "gemma-4", "gemma4", "nemotron-h",
    "exaone", "bailing", "ling-", "minimax", "pangu",
)  # fmt: skip


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    line: int | None
    key: str
    message: str
    fix: str


def _model_has_mtp(name: str | None) -> bool:
    lowered = (name or "").lower()
    return any(family in lowered for family in MTP_FAMILIES)


class _Linter:
    def __init__(self, doc: ConfigDocument) -> None:
        self.doc = doc
        self.data = doc.data
        self.findings: list[Finding] = []

    def value(self, path: KeyPath) -> Any:
        node: Any = self.data
        for key in path:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    def add(self, finding_id: str, severity: Severity, path: KeyPath, message: str, fix: str) -> None:
        self.findings.append(
            Finding(finding_id, severity, self.doc.line_of(path), dotted(path), message, fix)
        )


# --- rules shared by every kind -------------------------------------------------------------------------

_NO_DISABLE_BY_BATCH = (
    "vLLM removed --speculative-disable-by-batch-size (2025-03)",
    "delete it; spectop's acceptance alerts show when drafting stops paying off",
)
_NO_PER_REQUEST_SWITCH = (
    "no server has a per-request switch for speculative decoding; it is set when the server starts",
    "delete it and compare two server configs (spectop bench) instead",
)
# Keys current servers no longer take: path -> (message, fix).
_REMOVED: dict[str, dict[KeyPath, tuple[str, str]]] = {
    "vllm_toml": {
        ("speculative", "speculative_model"): (
            "vLLM removed --speculative-model (v0.8.3); the draft is set in --speculative-config",
            'for DeepSeek MTP write method = "mtp" and drop this key (the target drafts itself); '
            "for a separate draft model rename it to model",
        ),
        ("model", "num_speculative_tokens"): (
            "vLLM removed --num-speculative-tokens; it lives in --speculative-config",
            "move it to [speculative] num_speculative_tokens",
        ),
        ("model", "speculative_model"): (
            "vLLM removed --speculative-model; the draft is set in --speculative-config",
            "move it to [speculative] as method / model",
        ),
        ("speculative", "speculative_disable_by_batch_size"): _NO_DISABLE_BY_BATCH,
        ("speculative", "disable_by_batch_size"): _NO_DISABLE_BY_BATCH,
    },
    "client_json": {
        ("extra_body", "enable_speculative"): _NO_PER_REQUEST_SWITCH,
        ("enable_speculative",): _NO_PER_REQUEST_SWITCH,
    },
}


def _schema_rules(lint: _Linter) -> None:
    for issue in validate_data(lint.doc.kind, lint.data):
        if issue.path == ("speculative_algorithm",):
            fix = (
                'use "EAGLE" (or its alias "NEXTN") for DeepSeek MTP; the NextN weights are in the checkpoint'
            )
            lint.add("sglang-unknown-algorithm", "error", issue.path, issue.message, fix)
        else:
            lint.add(
                "invalid-value", "error", issue.path, issue.message, "set a valid value (see the help line)"
            )
    removed = _REMOVED.get(lint.doc.kind, {})
    for path, (message, fix) in removed.items():
        if lint.doc.has(path):
            lint.add("removed-key", "warning", path, message, fix)
    for path in unknown_keys(lint.doc.kind, lint.data):
        if is_secret_key(path):
            lint.add(
                "secret-in-file",
                "warning",
                path,
                f"{dotted(path)} looks like a credential stored in the file",
                "move it to an environment variable and name that variable in api_key_env",
            )
        elif path not in removed:
            # Reported only in sections the schema knows (never inside unknown or free-form tables):
            # there an unknown key is most likely a typo that the server rejects or silently ignores.
            hint = did_you_mean(lint.doc.kind, path, lint.data).removeprefix("; ")
            lint.add(
                "unknown-key",
                "warning",
                path,
                f"spectop does not know {dotted(path)!r}; kept as it is" + (f" ({hint})" if hint else ""),
                "check the spelling; unknown keys are passed through untouched",
            )


def _vllm_spec_on(lint: _Linter) -> bool:
    spec = lint.value(("speculative",))
    return isinstance(spec, dict) and spec.get("enabled", True) is not False


def _vllm_rules(lint: _Linter) -> None:
    spec_on = _vllm_spec_on(lint)
    tokens = lint.value(("speculative", "num_speculative_tokens"))
    if spec_on and isinstance(tokens, int) and tokens > MAX_USEFUL_DRAFT_TOKENS:
        lint.add(
            "too-many-draft-tokens",
            "warning",
            ("speculative", "num_speculative_tokens"),
            f"{tokens} draft tokens: above {MAX_USEFUL_DRAFT_TOKENS}, acceptance falls faster than "
            "throughput rises",
            "start at 2, step up to 4 while watching the acceptance curve",
        )
    method = lint.value(("speculative", "method"))
    target = lint.value(("model", "name"))
    draft = lint.value(("speculative", "model")) or lint.value(("speculative", "speculative_model"))
    if spec_on and isinstance(target, str):
        is_mtp = method in (None, "mtp") or (isinstance(method, str) and method.endswith("_mtp"))
        if is_mtp and draft in (None, target) and not _model_has_mtp(target):
            lint.add(
                "untrained-draft",
                "warning",
                ("speculative", "method") if method else ("speculative",),
                f"{target} has no MTP heads trained with it: drafting will mostly be rejected "
                "(acceptance < 0.3 makes it slower)",
                "use a model with native MTP (DeepSeek-V3/R1, MiMo, ...) or an EAGLE/draft model "
                "trained for this target",
            )
        if isinstance(method, str) and method.endswith("_mtp"):
            lint.add(
                "deprecated-method",
                "info",
                ("speculative", "method"),
                f"vLLM rewrites method {method!r} to 'mtp' with a deprecation warning",
                'write method = "mtp"',
            )
        if is_mtp and isinstance(tokens, int) and tokens > 1:
            lint.add(
                "mtp-layer-reuse",
                "info",
                ("speculative", "num_speculative_tokens"),
                "with k > 1, vLLM runs the same MTP layer k times, which may lower acceptance",
                "compare k = 1 and k = 2 on the dashboard",
            )
    memory = lint.value(("model", "gpu_memory_utilization"))
    if spec_on and isinstance(memory, int | float) and memory >= 0.9:
        lint.add(
            "gpu-memory-high-with-spec",
            "warning",
            ("model", "gpu_memory_utilization"),
            f"gpu_memory_utilization {memory} with speculation on: drafting needs extra KV cache (OOM risk)",
            f"try {SAFE_GPU_MEMORY}, or halve scheduler.max_num_seqs",
        )
    if lint.doc.has(("speculative", "acceptance_threshold")):
        lint.add(
            "spectop-only-key",
            "info",
            ("speculative", "acceptance_threshold"),
            "no server falls back to plain decoding on low acceptance; spectop alerts instead",
            "keep it: spectop's dashboard warns when acceptance stays below it",
        )
    _vllm_table_rules(lint, spec_on)
    _vllm_method_rules(lint, spec_on)
    _vllm_sampling_rules(lint, spec_on)
    if spec_on and lint.value(("model", "enable_lora")) is True:
        lint.add(
            "spec-feature-conflict",
            "warning",
            ("model", "enable_lora"),
            "LoRA with speculative decoding needs a larger token budget and may fail at start-up",
            "raise scheduler.max_num_batched_tokens or lower num_speculative_tokens",
        )


def _data_parallel_size(lint: _Linter) -> int | None:
    """data_parallel_size wherever the file sets it ([model] is the schema's place)."""
    for section in lint.data.values():
        value = section.get("data_parallel_size") if isinstance(section, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _vllm_table_rules(lint: _Linter, spec_on: bool) -> None:
    path = ("speculative", TABLE_KEY)
    ranges = table_or_none(lint.value(path))
    if ranges is None:
        return  # absent, or a shape the schema rules report
    tokens = lint.value(("speculative", "num_speculative_tokens"))
    max_k = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
    for problem in table_problems(ranges, max_k):
        lint.add(problem.id, problem.severity, path, problem.message, problem.fix)
    if max_k is None and spec_on:
        lint.add(
            "spec-table-no-max",
            "error",
            path,
            "the table needs num_speculative_tokens: vLLM sizes its buffers by it and clamps every k to it",
            f"set num_speculative_tokens = {max(k for _lo, _hi, k in ranges) or 1}",
        )
    dp_size = _data_parallel_size(lint)
    if spec_on and dp_size is not None and dp_size > 1:
        lint.add(
            "spec-table-data-parallel",
            "warning",
            path,
            f"vLLM switches the table off with data parallel > 1 (data_parallel_size = {dp_size}) and runs "
            f"the static num_speculative_tokens{f' = {max_k}' if max_k else ''} at every batch size",
            "drop the table, or set num_speculative_tokens to the k the busiest load wants",
        )
    if isinstance(lint.value(path), dict):
        lint.add(
            "spec-table-dict-form",
            "info",
            path,
            'the dict form ({"1-16": 3}) is the setting\'s early draft; vLLM 0.32 takes [[lo, hi, k], ...]',
            "spectop launch writes the list form; write it in the file too: [[1, 16, 3], ...]",
        )


# The `*_mtp` method names vLLM 0.32 knows (MTPModelTypes in vllm/config/speculative.py); it rewrites
# each to "mtp" and refuses any other `*_mtp`.
VLLM_MTP_NAMES = frozenset(
    {
        "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp",
        "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp",
        "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
        "bailing_hybrid_mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "hy_v4_mtp",
        "gemma4_mtp", "inkling_mtp", "glm5_next_mtp",
    }
)  # fmt: skip
# Methods whose draft is a separate checkpoint: without `model` vLLM has nothing to load.
DRAFT_CHECKPOINT_METHODS = ("eagle", "eagle3", "dflash", "dspark", "draft_model", "medusa", "mlp_speculator")


def _vllm_method_rules(lint: _Linter, spec_on: bool) -> None:
    path = ("speculative", "method")
    method = lint.value(path)
    if not spec_on or not isinstance(method, str):
        return
    if method.endswith("_mtp") and method not in VLLM_MTP_NAMES:
        lint.add(
            "unknown-method",
            "warning",
            path,
            f"vLLM 0.32 does not know method {method!r} and refuses it (it knows mtp and "
            f"{len(VLLM_MTP_NAMES)} model-named *_mtp aliases)",
            'write method = "mtp": vLLM finds the MTP heads from the checkpoint',
        )
    draft = lint.value(("speculative", "model")) or lint.value(("speculative", "speculative_model"))
    if method in DRAFT_CHECKPOINT_METHODS and not draft:
        lint.add(
            "draft-model-missing",
            "error",
            path,
            f"method {method!r} drafts with a separate checkpoint, and [speculative] has no model",
            f"set model to the {method} draft trained for this target",
        )


# rejection_sample_method: vLLM 0.32's values, and the older builds' names (vllm/config/speculative.py).
REJECTION_METHODS = ("standard", "synthetic", "block")
OLD_REJECTION_METHODS = {"strict": "standard", "probabilistic": "standard"}


def _vllm_sampling_rules(lint: _Linter, spec_on: bool) -> None:
    path = ("speculative", "rejection_sample_method")
    method = lint.value(path)
    if isinstance(method, str) and method in OLD_REJECTION_METHODS:
        lint.add(
            "renamed-value",
            "warning",
            path,
            f"rejection_sample_method {method!r} is an older vLLM's name; current vLLM takes "
            f"{', '.join(REJECTION_METHODS)} and refuses {method!r}",
            f'write rejection_sample_method = "{OLD_REJECTION_METHODS[method]}"',
        )
    elif isinstance(method, str) and method not in REJECTION_METHODS:
        lint.add(
            "invalid-value",
            "error",
            path,
            f"rejection_sample_method {method!r}: vLLM takes {', '.join(REJECTION_METHODS)}",
            'write rejection_sample_method = "standard" (the default)',
        )
    for name in ("synthetic_acceptance_rates", "synthetic_acceptance_length"):
        key = ("speculative", name)
        if lint.doc.has(key):
            lint.add(
                "benchmarking-only",
                "warning",
                key,
                f"{name} fakes acceptance for benchmarking: the server's acceptance and speedup are then "
                "made up, not measured",
                'delete it in a production config (and rejection_sample_method = "synthetic" with it)',
            )
            if spec_on and method != "synthetic":
                lint.add(
                    "invalid-value",
                    "error",
                    key,
                    f'vLLM refuses {name} unless rejection_sample_method = "synthetic"',
                    f"delete {name}",
                )


def _sglang_adaptive_rules(lint: _Linter, steps: Any, topk: Any) -> None:
    """`speculative_adaptive` and its config file (tui/configs/sglang_adaptive.py)."""
    adaptive = lint.value(("speculative_adaptive",))
    config_path = lint.value(("speculative_adaptive_config",))
    if config_path and not adaptive:
        lint.add(
            "sglang-adaptive-config-unused",
            "warning",
            ("speculative_adaptive_config",),
            "speculative_adaptive_config is read only with speculative_adaptive = true",
            "set speculative_adaptive to true, or remove the config file setting",
        )
    if not adaptive:
        return
    if isinstance(topk, int) and topk != 1:
        lint.add(
            "sglang-adaptive-topk",
            "error",
            ("speculative_eagle_topk",),
            f"adaptive steps need speculative_eagle_topk = 1 (not {topk})",
            "set speculative_eagle_topk to 1, or turn speculative_adaptive off",
        )
    if not isinstance(config_path, str) or not config_path:
        return
    path = Path(config_path).expanduser()
    if not path.is_absolute():
        return  # relative to the server's working directory: only the server can tell
    config, why = sglang_adaptive.read_config(path)
    problems = [why] if why else sglang_adaptive.problems(config)
    for problem in problems:
        lint.add(
            "sglang-adaptive-config",
            "error",
            ("speculative_adaptive_config",),
            f"adaptive config: {problem}",
            'write JSON such as {"candidate_steps": [1, 3, 7], "ema_alpha": 0.2, "update_interval": 8}',
        )
    found = sglang_adaptive.sections(config) if not problems else None
    if found and isinstance(steps, int):
        candidates = sorted({step for settings in found.values() for step in sglang_adaptive.tiers(settings)})
        if steps not in candidates:
            lint.add(
                "sglang-adaptive-steps",
                "info",
                ("speculative_num_steps",),
                f"speculative_num_steps {steps} is not a candidate step {candidates}: the server "
                "starts at the middle candidate and moves between them",
                f"use one of {candidates}, or drop speculative_num_steps",
            )


def _sglang_rules(lint: _Linter) -> None:
    algorithm = lint.value(("speculative_algorithm",))
    steps = lint.value(("speculative_num_steps",))
    topk = lint.value(("speculative_eagle_topk",))
    draft_tokens = lint.value(("speculative_num_draft_tokens",))
    if not algorithm:
        if lint.value(("speculative_adaptive",)):
            lint.add(
                "sglang-adaptive-without-speculation",
                "warning",
                ("speculative_adaptive",),
                "speculative_adaptive has no effect: speculative_algorithm is not set",
                'set speculative_algorithm (e.g. "EAGLE"), or remove speculative_adaptive',
            )
        return
    _sglang_adaptive_rules(lint, steps, topk)
    name = str(algorithm).upper()
    adaptive = bool(lint.value(("speculative_adaptive",)))
    if steps is None and not adaptive and (topk is not None or draft_tokens is not None):
        lint.add(
            "sglang-auto-choice",
            "error",
            ("speculative_eagle_topk",) if topk is not None else ("speculative_num_draft_tokens",),
            "speculative_num_steps is omitted, so topk and num_draft_tokens must be omitted too "
            "(SGLang stops with an AssertionError)",
            "set speculative_num_steps, or remove topk and num_draft_tokens to let SGLang choose",
        )
    if topk == 1 and isinstance(steps, int) and draft_tokens is not None and draft_tokens != steps + 1:
        lint.add(
            "sglang-draft-tokens-adjusted",
            "warning",
            ("speculative_num_draft_tokens",),
            f"with speculative_eagle_topk = 1 SGLang forces num_draft_tokens = num_steps + 1 = "
            f"{steps + 1} (not {draft_tokens})",
            f"set speculative_num_draft_tokens to {steps + 1}, or raise topk for a tree",
        )
    if isinstance(steps, int) and steps > MAX_USEFUL_DRAFT_TOKENS:
        lint.add(
            "too-many-draft-tokens",
            "warning",
            ("speculative_num_steps",),
            f"{steps} draft steps: above {MAX_USEFUL_DRAFT_TOKENS}, acceptance falls faster than "
            "throughput rises",
            "DeepSeek's default is 3 steps, topk 1, 4 draft tokens",
        )
    model = lint.value(("model_path",))
    needs_draft = name in ("EAGLE", "NEXTN", "EAGLE3") and not lint.value(("speculative_draft_model_path",))
    if needs_draft and isinstance(model, str) and not _model_has_mtp(model):
        lint.add(
            "untrained-draft",
            "warning",
            ("speculative_algorithm",),
            f"{model} ships no NextN/MTP heads: {name} needs a draft trained with this target",
            "set speculative_draft_model_path to an EAGLE draft for this model",
        )
    memory = lint.value(("mem_fraction_static",))
    if isinstance(memory, int | float) and memory >= 0.9:
        lint.add(
            "gpu-memory-high-with-spec",
            "warning",
            ("mem_fraction_static",),
            f"mem_fraction_static {memory} with speculation on leaves little room for CUDA graphs "
            "and the draft",
            f"try {SAFE_GPU_MEMORY} or lower max_running_requests",
        )
    pp_size = lint.value(("pp_size",))
    if isinstance(pp_size, int) and pp_size > 1:
        lint.add(
            "spec-feature-conflict",
            "error",
            ("pp_size",),
            "SGLang rejects pipeline parallelism with speculative decoding",
            "set pp_size to 1 or turn speculation off",
        )
    if lint.value(("enable_mixed_chunk",)) is True:
        lint.add(
            "spec-feature-conflict",
            "warning",
            ("enable_mixed_chunk",),
            "SGLang turns mixed chunked prefill off under speculative decoding",
            "remove enable_mixed_chunk",
        )
    if lint.value(("enable_dp_attention",)) is True and name in ("STANDALONE", "NGRAM", "DFLASH"):
        lint.add(
            "spec-feature-conflict",
            "error",
            ("enable_dp_attention",),
            f"{name} does not support DP attention",
            "use EAGLE or turn enable_dp_attention off",
        )
    lint.add(
        "sglang-config-format",
        "info",
        ("speculative_algorithm",),
        "SGLang's --config takes YAML with dashed keys, not this JSON",
        "run `spectop config launch FILE --format yaml` for a file SGLang accepts",
    )


def _client_rules(lint: _Linter) -> None:
    timeout = lint.value(("timeout",))
    short = isinstance(timeout, int | float) and timeout < MIN_STREAM_TIMEOUT_S
    if lint.value(("stream",)) is True and short:
        lint.add(
            "client-timeout-short",
            "warning",
            ("timeout",),
            f"a {timeout} s timeout with streaming: slow first tokens (MTP adds a forward pass) "
            "look like failures",
            "use 120 s",
        )
    retries = lint.value(("max_retries",))
    if isinstance(retries, int) and retries > MAX_SANE_RETRIES:
        lint.add(
            "client-retries-high",
            "warning",
            ("max_retries",),
            f"{retries} retries multiply load on an overloaded server (retry storms)",
            "use 2, with backoff",
        )
    extra = lint.value(("extra_body",))
    if isinstance(extra, dict):
        for key in ("min_p", "logit_bias"):
            if key in extra:
                lint.add(
                    "spec-feature-conflict",
                    "info",
                    ("extra_body", key),
                    f"vLLM ignores {key} under speculative decoding",
                    f"drop {key} when comparing",
                )


_KIND_RULES: dict[str, Callable[[_Linter], None]] = {
    "vllm_toml": _vllm_rules,
    "sglang_json": _sglang_rules,
    "client_json": _client_rules,
}


def lint_document(doc: ConfigDocument) -> list[Finding]:
    """All findings, errors first, then by line."""
    lint = _Linter(doc)
    _schema_rules(lint)
    _KIND_RULES[doc.kind](lint)
    return sort_findings(lint.findings)


def gpu_findings(doc: ConfigDocument, gpus: Sequence[GpuSample]) -> list[Finding]:
    """The config's memory fraction against the node's GPUs as they are now (SGLang's auto: nothing)."""
    lint = _Linter(doc)
    path: KeyPath
    if doc.kind == "vllm_toml":
        path = ("model", "gpu_memory_utilization")
        fraction = lint.value(path)
        if fraction is None:
            fraction = VLLM_DEFAULT_GPU_MEMORY
        spec_on = _vllm_spec_on(lint)
    elif doc.kind == "sglang_json":
        path = ("mem_fraction_static",)
        fraction = lint.value(path)
        spec_on = bool(lint.value(("speculative_algorithm",)))
    else:
        return []
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 1:
        return []  # absent (SGLang's auto) or invalid: the schema rules report the latter
    for problem in headroom_problems(float(fraction), path[-1], gpus, spec_on):
        lint.add(problem.id, problem.severity, path, problem.message, problem.fix)
    return lint.findings


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.line or 0, f.id))


def has_errors(findings: list[Finding]) -> bool:
    return any(finding.severity == "error" for finding in findings)
