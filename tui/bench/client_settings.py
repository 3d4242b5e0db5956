"""The client `settings.json` (base_url, api_key_env, model, timeout, retries, sampling, extra_body)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tui.bounded_read import read_text
from tui.configs.schemas import ClientConfig
from tui.validators import field_path, friendly_message

MAX_SETTINGS_BYTES = 1_000_000
KNOWN_KEYS = frozenset(ClientConfig.model_fields)


class ClientSettingsError(Exception):
    """A client settings file that cannot be used; the message names the file and the field."""


class ClientSettings(BaseModel):
    """What a burst takes from the client `settings.json` (validated by `configs.schemas.ClientConfig`)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    api_key_env: str | None = None
    model: str | None = None
    timeout: float = 120.0
    max_retries: int = 2
    stream: bool = True
    temperature: float = 0.0
    max_tokens: int = 512
    extra_body: dict[str, Any] = Field(default_factory=dict)


def parse_client_settings(text: str, label: str = "<client settings>") -> ClientSettings:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ClientSettingsError(
            f"{label}: line {error.lineno}, column {error.colno}: not valid JSON: {error.msg}"
        ) from error
    if not isinstance(data, dict):
        raise ClientSettingsError(f"{label}: expected a JSON object at the top level")
    problems = [
        f"{label}: field {key}: not a client setting (a typo?)" for key in data if key not in KNOWN_KEYS
    ]
    try:
        config = ClientConfig.model_validate(data)
    except ValidationError as error:
        problems += [
            f"{label}: field {field_path(item['loc'])}: {friendly_message(dict(item))}"
            for item in error.errors()
        ]
    if problems:
        raise ClientSettingsError("\n".join(problems))
    given = {key: value for key, value in config.model_dump().items() if value is not None}
    return ClientSettings(**given)


def load_client_settings(path: str | Path) -> ClientSettings:
    path = Path(path)
    text = read_text(path, MAX_SETTINGS_BYTES, ClientSettingsError, "; not a settings file")
    return parse_client_settings(text, str(path))
