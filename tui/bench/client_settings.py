"""The client `settings.json` (base_url, api_key_env, model, timeout, retries, sampling, extra_body).

The file names the environment variable that holds the API key, never the key itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_SETTINGS_BYTES = 1_000_000


class ClientSettingsError(Exception):
    """A client settings file that cannot be used; the message names the file and the field."""


class ClientSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="server base URL, with or without /v1")
    api_key_env: str | None = Field(None, description="NAME of the environment variable holding the key")
    model: str | None = None
    timeout: float = Field(120.0, gt=0.0, le=86_400.0, description="seconds per connect / read")
    max_retries: int = Field(2, ge=0, le=10, description="retries of connect errors and 5xx/429 only")
    stream: bool = True
    temperature: float = Field(0.0, ge=0.0, le=5.0)
    max_tokens: int = Field(512, ge=1, le=1_000_000)
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request body")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/") if value else value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and (not value or not value.replace("_", "").isalnum()):
            raise ValueError(
                "expected the NAME of an environment variable (letters, digits, _), not the key itself"
            )
        return value


def parse_client_settings(text: str, label: str = "<client settings>") -> ClientSettings:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ClientSettingsError(
            f"{label}: line {error.lineno}, column {error.colno}: not valid JSON: {error.msg}"
        ) from error
    if not isinstance(data, dict):
        raise ClientSettingsError(f"{label}: expected a JSON object at the top level")
    try:
        return ClientSettings.model_validate(data)
    except ValidationError as error:
        problems = [
            f"{label}: field {'.'.join(str(part) for part in item['loc']) or '(top level)'}: {item['msg']}"
            for item in error.errors()
        ]
        raise ClientSettingsError("\n".join(problems)) from error


def load_client_settings(path: str | Path) -> ClientSettings:
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SETTINGS_BYTES + 1)
    except OSError as error:
        raise ClientSettingsError(f"{path}: cannot read: {error.strerror or error}") from error
    if len(raw) > MAX_SETTINGS_BYTES:
        raise ClientSettingsError(f"{path}: larger than {MAX_SETTINGS_BYTES} bytes; not a settings file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ClientSettingsError(f"{path}: not UTF-8 text (byte {error.start})") from error
    return parse_client_settings(text, str(path))
