"""Which kind of config file a text is: vLLM-style TOML, SGLang JSON or client JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal, cast, get_args

from tui.configs.errors import KindError

ConfigKind = Literal["vllm_toml", "sglang_json", "client_json"]
CONFIG_KINDS: tuple[str, ...] = get_args(ConfigKind)

KIND_TITLES: dict[str, str] = {
    "vllm_toml": "vLLM server (config.toml)",
    "sglang_json": "SGLang server (settings.json)",
    "client_json": "OpenAI client (settings.json)",
}

_SGLANG_HINTS = (
    "model_path", "tp_size", "mem_fraction_static", "speculative_algorithm", "disable_radix_cache",
)  # fmt: skip
_CLIENT_HINTS = ("base_url", "api_key_env", "max_retries", "timeout", "stream", "extra_body")


def parse_kind(name: str) -> ConfigKind:
    """A kind given by the user (`--kind`), with short aliases."""
    aliases = {"vllm": "vllm_toml", "toml": "vllm_toml", "sglang": "sglang_json", "client": "client_json"}
    value = aliases.get(name.strip().lower(), name.strip().lower())
    if value not in CONFIG_KINDS:
        expected = ", ".join(CONFIG_KINDS)
        raise KindError(f"unknown kind {name!r}: expected one of {expected} (or vllm, sglang, client)")
    return cast(ConfigKind, value)


def _json_kind(keys: set[str]) -> ConfigKind | None:
    sglang = sum(key in keys for key in _SGLANG_HINTS) + any(k.startswith("speculative_") for k in keys)
    client = sum(key in keys for key in _CLIENT_HINTS)
    if sglang == 0 and client == 0:
        return None
    return "sglang_json" if sglang >= client else "client_json"


def detect_kind(text: str, path: Path | None = None) -> ConfigKind:
    """The kind from the content. A `.json` file that does not start with `{` is still JSON."""
    stripped = text.lstrip("\ufeff \t\r\n")
    is_json_name = path is not None and path.suffix.lower() == ".json"
    if stripped.startswith("{") or is_json_name:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            keys = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:', text))
            return _json_kind(keys) or "sglang_json"
        if isinstance(data, dict):
            kind = _json_kind(set(data))
            if kind is not None:
                return kind
        raise KindError(
            "JSON file is neither SGLang server settings (model_path, speculative_algorithm, ...) "
            "nor client settings (base_url, timeout, ...); pass --kind"
        )
    # Not JSON: the only TOML kind. A syntax error is reported by the document loader.
    return "vllm_toml"
