"""Render a config document as the command that really starts the server.
vLLM: `vllm serve MODEL --flag ... --speculative-config '{json}'` or a `vllm serve --config` YAML
(vllm.md §3). SGLang: `python -m sglang.launch_server --model-path ...` or its `--config` YAML with
dashed keys (sglang.md §3.3). Client settings: a `curl` request that reads the key from the env variable."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from tui.configs.errors import ConfigError
from tui.configs.schemas import is_secret_key
from tui.configs.spec_table import TABLE_KEY, normalized, table_or_none

LaunchFormat = Literal["cli", "yaml"]

# spectop's own sections (the simulator's knobs): never passed to a server.
_SPECTOP_SECTIONS = {"sim"}
# spectop's own keys in [speculative]: never passed to vLLM.
_SPECTOP_ONLY = {"enabled", "acceptance_threshold"}
# Keys vLLM no longer takes; translated into --speculative-config instead.
_LEGACY_SPEC = {"speculative_model", "speculative_disable_by_batch_size", "disable_by_batch_size"}
# vLLM flags that are argparse BooleanOptionalAction (so false is written --no-FLAG).
_VLLM_OPTIONAL_BOOLS = {"enable-prefix-caching", "enable-chunked-prefill"}
_VLLM_RENAMED: dict[str, str] = {"chunked_prefill": "enable_chunked_prefill", "name": "model"}
# vLLM flags it refuses without --speculative-config ("--per-request-spec-decode-metrics requires
# speculative decoding to be enabled", vLLM 0.32): left out while speculation is off, so a file switched
# off (`enabled = false`: tune's value 0, the guard) still starts the server.
_VLLM_SPEC_ONLY = {"per_request_spec_decode_metrics"}


@dataclass
class LaunchCommand:
    """A command as groups of words: the program, then one per option; `prequoted` words are shell-quoted."""

    groups: list[list[str]]
    prequoted: set[str] = field(default_factory=set)

    @property
    def argv(self) -> list[str]:
        return [word for group in self.groups for word in group]

    def _quote(self, word: str) -> str:
        return word if word in self.prequoted else shlex.quote(word)

    def one_line(self) -> str:
        return " ".join(self._quote(word) for word in self.argv)

    def multi_line(self) -> str:
        """One option per line with backslash continuations, pastable into a shell."""
        return " \\\n  ".join(" ".join(self._quote(word) for word in group) for group in self.groups)


def _env_reference(key: str) -> str:
    """A shell reference that stands in for a credential, so it is never printed."""
    return '"$' + re.sub(r"[^A-Za-z0-9]", "_", key).upper() + '"'


def _mask_secrets(command: LaunchCommand) -> LaunchCommand:
    for group in command.groups:
        if len(group) == 2 and group[0].startswith("--") and is_secret_key((group[0][2:].replace("-", "_"),)):
            group[1] = _env_reference(group[0][2:])
            command.prequoted.add(group[1])
    return command


def _add_flag(groups: list[list[str]], key: str, value: Any, optional_bools: set[str]) -> None:
    name = key.replace("_", "-")
    if value is None:
        return
    if isinstance(value, bool):
        if value:
            groups.append([f"--{name}"])
        elif name in optional_bools:
            groups.append([f"--no-{name}"])
        return
    if isinstance(value, dict):
        groups.append([f"--{name}", json.dumps(value, separators=(", ", ": "))])
    elif isinstance(value, list):
        groups.append([f"--{name}", *(str(item) for item in value)])
    else:
        groups.append([f"--{name}", str(value)])


def vllm_speculative_config(data: dict[str, Any]) -> dict[str, Any] | None:
    """The --speculative-config object, or None when speculation is off."""
    spec = data.get("speculative")
    if not isinstance(spec, dict) or spec.get("enabled", True) is False:
        return None
    target = (data.get("model") or {}).get("name")
    out: dict[str, Any] = {}
    draft = spec.get("model") or spec.get("speculative_model")
    method = spec.get("method")
    if method is None and draft in (None, target):
        method = "mtp"  # the seed's speculative_model == target means the model's own MTP heads
    if method is not None:
        out["method"] = "mtp" if str(method).endswith("_mtp") else method
    if draft is not None and draft != target:
        out["model"] = draft
    skipped = _SPECTOP_ONLY | _LEGACY_SPEC | {"method", "model"}
    out.update({key: value for key, value in spec.items() if key not in skipped and value is not None})
    table = table_or_none(out.get(TABLE_KEY))
    if table is not None:  # the early dict form ({"1-16": 3}) as the list vLLM 0.32 takes
        out[TABLE_KEY] = normalized(table)
    return out


def _vllm_options(data: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    model_entry = data.get("model")
    model_section: dict[str, Any] = model_entry if isinstance(model_entry, dict) else {}
    model = model_section.get("name")
    if not model:
        raise ConfigError("[model] name is missing: vllm serve needs a model")
    options: list[tuple[str, Any]] = []
    spec = vllm_speculative_config(data)
    for section_name, section in data.items():
        if section_name in ("speculative", "sim") or not isinstance(section, dict):
            continue
        for key, value in section.items():
            if section_name == "model" and key == "name":
                continue
            if key in ("num_speculative_tokens", "speculative_model"):
                continue  # removed flags; lint says where they belong
            name = str(key)  # TOML keys are strings
            if spec is None and name in _VLLM_SPEC_ONLY:
                continue
            options.append((_VLLM_RENAMED.get(name, name), value))
    if spec is not None:
        options.append(("speculative_config", spec))
    return model, options


def _cli(program: list[str], options: list[tuple[str, Any]], optional_bools: set[str]) -> LaunchCommand:
    groups = [program]
    for key, value in options:
        _add_flag(groups, key, value, optional_bools)
    return _mask_secrets(LaunchCommand(groups))


def _yaml(header: str, options: list[tuple[str, Any]]) -> str:
    entries = [_yaml_entry(key.replace("_", "-"), value, "") for key, value in options if value is not None]
    return "\n".join([header, *entries]) + "\n"


def vllm_cli(data: dict[str, Any]) -> LaunchCommand:
    model, options = _vllm_options(data)
    return _cli(["vllm", "serve", model], options, _VLLM_OPTIONAL_BOOLS)


def _sglang_options(data: dict[str, Any]) -> list[tuple[str, Any]]:
    if not data.get("model_path"):
        raise ConfigError("model_path is missing: sglang.launch_server needs --model-path")
    return [(key, value) for key, value in data.items() if key not in _SPECTOP_SECTIONS]


def sglang_cli(data: dict[str, Any]) -> LaunchCommand:
    return _cli(["python", "-m", "sglang.launch_server"], _sglang_options(data), set())


def client_curl(data: dict[str, Any]) -> LaunchCommand:
    base_url = str(data.get("base_url") or "").rstrip("/")
    if not base_url:
        raise ConfigError("base_url is missing")
    body: dict[str, Any] = {"model": data.get("model"), "messages": [{"role": "user", "content": "Hello"}]}
    body.update(
        {key: data[key] for key in ("stream", "temperature", "max_tokens") if data.get(key) is not None}
    )
    if data.get("stream"):
        body["stream_options"] = {"include_usage": True}
    extra = data.get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    groups = [["curl", "-sS", "-N", f"{base_url}/chat/completions"], ["-H", "Content-Type: application/json"]]
    prequoted: set[str] = set()
    env_name = data.get("api_key_env")
    if isinstance(env_name, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env_name):
        header = f'"Authorization: Bearer ${env_name}"'  # expanded by the shell; the key is never printed
        groups.append(["-H", header])
        prequoted.add(header)
    if data.get("timeout") is not None:
        groups.append(["--max-time", str(data["timeout"])])
    groups.append(["-d", json.dumps(body, ensure_ascii=False)])
    return LaunchCommand(groups, prequoted)


# --- YAML (a tiny emitter for flat mappings with nested dicts and lists) --------------------------------

_PLAIN = re.compile(r"^[A-Za-z_./][A-Za-z0-9_./@+-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _yaml_scalar(value: Any) -> str:
    """A scalar, or a nested list / mapping in flow style (JSON is valid YAML)."""
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _yaml_entry(key: str, value: Any, indent: str) -> str:
    if is_secret_key((key.replace("-", "_"),)) and isinstance(value, str):
        return f"{indent}# {key}: (a credential: pass --{key} {_env_reference(key)} on the command line)"
    if isinstance(value, dict) and value:
        inner = "\n".join(_yaml_entry(str(k), v, indent + "  ") for k, v in value.items())
        return f"{indent}{key}:\n{inner}"
    if isinstance(value, list) and value:
        items = "\n".join(f"{indent}  - {_yaml_scalar(item)}" for item in value)
        return f"{indent}{key}:\n{items}"
    return f"{indent}{key}: {_yaml_scalar(value)}"


def render_launch(
    kind: str, data: dict[str, Any], fmt: LaunchFormat = "cli", *, multi_line: bool = True
) -> str:
    """The launch command (or YAML config) for a document's data. Raises ConfigError."""
    if fmt == "yaml":
        if kind == "vllm_toml":
            model, options = _vllm_options(data)
            return _yaml(f"# vllm serve --config serve.yaml\nmodel: {_yaml_scalar(model)}", options)
        if kind == "sglang_json":
            header = "# python -m sglang.launch_server --config config.yaml  (YAML only, dashed keys)"
            return _yaml(header, _sglang_options(data))
        raise ConfigError("client settings have no server YAML; use --format cli for a curl request")
    builders = {"vllm_toml": vllm_cli, "sglang_json": sglang_cli, "client_json": client_curl}
    command = builders[kind](data)
    return command.multi_line() if multi_line else command.one_line()
