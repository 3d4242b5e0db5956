"""API keys, the one rule: a key comes only from the environment variable a setting names and goes only
into the Authorization header of a request to that endpoint; never an argument, printed or logged."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol


class HasApiKey(Protocol):
    def api_key(self) -> str | None: ...


class ApiKeyError(ValueError):
    """The variable holds what no HTTP header may carry; the message names the variable, never the key."""


_CONTROL_NAMES = {"\r": "a carriage return", "\n": "a line feed", "\x00": "a NUL byte"}


def _invalid_because(key: str) -> str | None:
    """Why `key` cannot be sent as a header value (None when it can): h11 refuses controls and non-ASCII."""
    for index, char in enumerate(key):
        if char == "\t" and 0 < index < len(key) - 1:
            continue
        if ord(char) < 0x20 or ord(char) == 0x7F or char == "\t":
            what = _CONTROL_NAMES.get(char, f"the control character U+{ord(char):04X}")
            where = "ends in" if index == len(key) - 1 else "begins with" if index == 0 else "holds"
            hint = " (a key file saved with CRLF line endings?)" if char in "\r\n" else ""
            return f"it {where} {what}{hint}"
        if ord(char) > 0x7E:
            return f"it holds the non-ASCII character U+{ord(char):04X} at position {index + 1}"
    return "it begins or ends with a space" if key != key.strip(" ") else None


def api_key_from_env(name: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The key in environment variable `name` (None when unnamed, unset or empty); ApiKeyError, naming the
    variable and never the key, when it cannot be a header value."""
    if not name:
        return None
    key = (os.environ if environ is None else environ).get(name) or None
    if key is not None:
        why = _invalid_because(key)
        if why is not None:
            raise ApiKeyError(f"the API key in {name} is invalid: {why}; fix the variable (key not shown)")
    return key


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """The Authorization header for an API key; none without a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def endpoint_headers(endpoint: HasApiKey) -> dict[str, str]:
    """The Authorization header for an endpoint's settings (its `api_key_env`)."""
    return bearer_headers(endpoint.api_key())
