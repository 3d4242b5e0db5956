"""Field checks shared by the models of the files spectop reads, and their messages in spectop's words.
One URL rule everywhere: an http(s) URL, `host:port` gets `http://`, no user or password in it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


CREDENTIALS_REFUSED = (
    "put no user or password in the URL (it would be shown, exported and recorded): give the key by the "
    "name of its environment variable (api_key_env, --api-key-env; Prometheus: bearer_token_env or "
    "basic_auth_user and basic_auth_password_env)"
)


def has_credentials(url: str) -> bool:
    """True when `url` carries a user (and maybe a password) before its host: `http://user:pass@host`."""
    rest = url.split("://", 1)[-1]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return "@" in authority


def without_credentials(url: str) -> str:
    """`url` with any user and password before its host replaced by `****` (for error messages)."""
    if not has_credentials(url):
        return url
    return re.sub(r"(?s)^(.*?://)?[^/?#]*@", r"\1****@", url, count=1)  # up to the authority's last @


def normalize_http_url(value: str, *, allow_credentials: bool = False) -> str:
    """`value` as an http(s) URL without a trailing slash (`host:port` gets `http://`); a user or password
    in it is refused unless `allow_credentials`: every URL spectop is given is shown somewhere."""
    text = value.strip()
    if not text:
        raise ValueError("expected an http:// or https:// URL, got an empty value")
    if not allow_credentials and has_credentials(text):
        raise ValueError(CREDENTIALS_REFUSED)
    if any(character.isspace() or not character.isprintable() for character in text):
        raise ValueError(f"expected an http:// or https:// URL, got {value!r} (spaces or control characters)")
    if not _SCHEME.match(text):
        text = f"http://{text}"
    scheme = text.split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
    try:
        host = urlsplit(text).hostname
    except ValueError as error:  # e.g. an unclosed [ in an IPv6 literal
        raise ValueError(f"expected an http:// or https:// URL, got {value!r} ({error})") from None
    if not host:
        raise ValueError(f"expected an http:// or https:// URL with a host, got {value!r}")
    return text.rstrip("/")


def scheme_was_added(original: str, normalized: str) -> bool:
    return not _SCHEME.match(original.strip()) and normalized.startswith("http://")


def check_http_url(value: str) -> str:
    """For fields that are kept as written (config files): the URL must carry its scheme."""
    normalized = normalize_http_url(value, allow_credentials=True)  # the file's own value, not shown
    if scheme_was_added(value, normalized):
        raise ValueError(f"expected an http:// or https:// URL, got {value!r} (did you mean {normalized!r}?)")
    return value


def check_env_var_name(value: str) -> str:
    """The NAME of an environment variable; catches an API key pasted in its place."""
    if not (value and value.replace("_", "").isalnum() and value.isascii() and not value[0].isdigit()):
        raise ValueError(
            "expected the NAME of an environment variable (letters, digits, _), not the key itself"
        )
    return value


# The field types of the models spectop reads: each rule checked once, wherever the field is.
HttpUrl = Annotated[str, AfterValidator(normalize_http_url)]
WrittenHttpUrl = Annotated[str, AfterValidator(check_http_url)]  # a config file's URL, kept as written
EnvName = Annotated[str, AfterValidator(check_env_var_name)]


# pydantic's error types → spectop's words. `ctx` carries the bound of a range error.
_MESSAGES: dict[str, str] = {
    "missing": "required, but not given",
    "extra_forbidden": "not a known field",
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be at most {le}",
    "string_too_short": "must not be empty",
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "int_parsing": "expected a whole number",
    "int_type": "expected a whole number",
    "int_from_float": "expected a whole number",
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "string_type": "expected text (a quoted string)",
    "list_type": "expected a list",
    "dict_type": "expected a table / object",
    "model_type": "expected a table / object",
    "finite_number": "expected a finite number",
}


def friendly_message(error: dict[str, Any]) -> str:
    """One pydantic error (an item of `ValidationError.errors()`) as spectop says it."""
    kind = str(error.get("type", ""))
    message = str(error.get("msg", ""))
    if kind == "value_error" or message.startswith(("Value error, ", "Assertion failed, ")):
        return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "literal_error":
        expected = (error.get("ctx") or {}).get("expected")
        got = error.get("input")
        return f"expected one of {expected}, got {got!r}" if expected else message
    template = _MESSAGES.get(kind)
    if template is None:
        return message
    try:
        return template.format(**(error.get("ctx") or {}))
    except (KeyError, IndexError):
        return message


def field_path(location: Sequence[int | str]) -> str:
    return ".".join(str(part) for part in location) or "(top level)"


# `--match`: PromQL label matchers that select the fleet's instances, e.g. `{job="vllm",env=~"prod.*"}`.
# Only label matchers are accepted (no metric name, no functions), so the text can be spliced into
# every selector spectop builds without changing the meaning of a query.
_STRING = r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
_MATCHER = re.compile(rf"\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*({_STRING})\s*")


def parse_matchers(text: str) -> str:
    """The matchers of `text` normalised to `a="x",b=~"y"` (no braces); ValueError if not matchers."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    body = body.strip().rstrip(",")
    if not body:
        return ""
    parts: list[str] = []
    position = 0
    while position < len(body):
        found = _MATCHER.match(body, position)
        if found is None:
            raise ValueError(
                f'expected label matchers such as {{job="vllm",env=~"prod.*"}}, got {text!r} '
                f"(near {body[position : position + 20]!r})"
            )
        name, operator, value = found.groups()
        if name == "__name__":
            raise ValueError(f"{text!r}: select instances by their labels, not by metric name")
        parts.append(f"{name}{operator}{value}")
        position = found.end()
        if position < len(body):
            if body[position] != ",":
                raise ValueError(f"{text!r}: matchers must be separated by commas")
            position += 1
    return ",".join(parts)
