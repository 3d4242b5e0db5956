"""What a running sim lets change: its faults (what can go wrong on purpose, for tests and demos) and
`POST /sim/control`: what it accepts, its errors as one sentence per problem (never pydantic's report),
and `KeptControl`, which carries the changes across restarts (a real server's traffic outlives one)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tui.configs.atomic import write_file

GARBAGE_METRICS = (
    "<html><body><h1>502 Bad Gateway</h1></body></html>\n"
    'vllm:generation_tokens_total{engine="0" 12x\n'
    "# TYPE broken\x00\n"
)


class FaultSettings(BaseModel):
    """Every fault is off by default. Rates are probabilities per request."""

    model_config = ConfigDict(extra="forbid")

    error_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # requests answered with HTTP 500
    slow_first_token_s: float = Field(default=0.0, ge=0.0)  # extra delay before a request is scheduled
    disconnect_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # streams cut mid-way
    stall_every_s: float = Field(default=0.0, ge=0.0)  # the engine freezes this often ...
    stall_s: float = Field(default=0.0, ge=0.0)  # ... for this long (no tokens, no log lines)
    garbage_metrics: bool = False  # /metrics answers with unparseable text
    counter_reset_every_s: float = Field(default=0.0, ge=0.0)  # counters drop to 0 this often
    lossy_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # an accepted draft token is wrong (lossy)

    def merged(self, changes: dict[str, object]) -> FaultSettings:
        """A copy with `changes` applied (validated; unknown names are rejected)."""
        return FaultSettings.model_validate({**self.model_dump(), **changes})


FAULT_NAMES = tuple(FaultSettings.model_fields)
EXAMPLE = '{"acceptance": 0.5}'


class ControlChanges(BaseModel):
    """What `SimServer.control` / `POST /sim/control` accept; anything else is rejected."""

    model_config = ConfigDict(extra="forbid")

    # per-position probabilities (each 0..1), or a factor 0..1 on the current ones
    acceptance: list[float] | float | None = None
    faults: FaultSettings | dict[str, Any] | None = None
    background_load_rps: float | None = Field(default=None, ge=0.0, le=1000.0)
    reset_counters: bool = False
    speed: float | None = Field(default=None, gt=0.0)
    content_effect: float | None = Field(default=None, ge=0.0, le=3.0)
    context_half_tokens: float | None = Field(default=None, ge=0.0)
    context_ms_per_1k: float | None = Field(default=None, ge=0.0)
    error_rate: float | None = None
    slow_first_token_s: float | None = None
    disconnect_rate: float | None = None
    stall_every_s: float | None = None
    stall_s: float | None = None
    garbage_metrics: bool | None = None
    counter_reset_every_s: float | None = None
    lossy_rate: float | None = None

    @field_validator("acceptance")
    @classmethod
    def _acceptance_in_range(cls, value: list[float] | float | None) -> list[float] | float | None:
        if isinstance(value, list):
            if not value or any(not 0.0 <= p <= 1.0 for p in value):
                raise ValueError("a list holds one probability per draft position, each between 0 and 1")
        elif value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(
                f"{value:g} is not a factor between 0 and 1 (a number scales the per-position probabilities "
                "down: 0.5 halves them; to raise them give the list, e.g. [0.9, 0.8, 0.7])"
            )
        return value


CONTROL_KEYS = tuple(ControlChanges.model_fields)


def _key(location: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in location if not isinstance(part, int)) or "body"


def control_error(error: ValidationError | ValueError | TypeError) -> str:
    """The problems of a control body as sentences: key, what was given, what is expected."""
    if not isinstance(error, ValidationError):
        return str(error)
    sentences: list[str] = []
    seen: set[str] = set()
    seen_keys: set[str] = set()
    for problem in error.errors():
        location = tuple(problem.get("loc", ()))
        # pydantic tries each member of a union: "acceptance.list[float]" and "acceptance.float"
        location = tuple(part for part in location if part not in ("list[float]", "float", "FaultSettings"))
        location = tuple(part for part in location if not str(part).startswith("dict["))
        key = _key(location)
        kind = problem.get("type", "")
        given = problem.get("input")
        shown = f"{given:g}" if isinstance(given, float) else repr(given)
        if key in seen_keys and kind not in ("extra_forbidden",):
            continue  # one sentence per key (pydantic reports each member of a union)
        seen_keys.add(key)
        if kind == "extra_forbidden":
            name = key.rsplit(".", 1)[-1]
            close = difflib.get_close_matches(name, CONTROL_KEYS + FAULT_NAMES, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            sentence = f"unknown key {name!r}{hint}; known: {', '.join(CONTROL_KEYS)}"
        elif kind == "value_error":
            sentence = f"{key}: {str(problem.get('msg', '')).removeprefix('Value error, ')}"
        elif kind.startswith(("greater_than", "less_than")):
            words = {"gt": "above", "ge": "at least", "lt": "below", "le": "at most"}
            limit = " and ".join(f"{words.get(k, k)} {v:g}" for k, v in (problem.get("ctx") or {}).items())
            sentence = f"{key}: {shown} is out of range (expected a number {limit})"
        else:
            expected = {"acceptance": "a number 0..1 or a list of probabilities"}.get(key) or str(
                problem.get("msg", "another value")
            ).lower().removeprefix("input should be ")
            sentence = f"{key}: {shown} is not valid (expected {expected})"
        if sentence not in seen:
            seen.add(sentence)
            sentences.append(sentence)
    return "; ".join(sentences) or "the body was not understood"


def parse_changes(data: object) -> ControlChanges:
    """The body as changes; TypeError when it is not a JSON object, ValidationError when a key is bad."""
    if not isinstance(data, dict):
        raise TypeError(f"the body must be a JSON object such as {EXAMPLE}, not {type(data).__name__}")
    return ControlChanges.model_validate(data)


class KeptControl:
    """Every accepted control body but its `reset_counters`, in order: replayed on each start, after the
    config is read (a factor scales the new config's acceptance). With a `path` they are kept in that file
    (a JSON list), read when the sim is made: a sim started again after it died has them too."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.bodies: list[dict[str, Any]] = self._read(path) if path is not None else []

    @staticmethod
    def _read(path: Path) -> list[dict[str, Any]]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as error:
            raise ValueError(f"{path}: cannot read the kept /sim/control changes: {error}") from None
        if not isinstance(data, list) or not all(isinstance(body, dict) for body in data):
            raise ValueError(f"{path}: expected a JSON list of /sim/control bodies")
        for body in data:
            try:
                parse_changes(body)
            except ValidationError as error:
                raise ValueError(f"{path}: {control_error(error)}") from None
        return data

    def keep(self, body: dict[str, Any]) -> None:
        """Keep `body` (checked already); a file is written before the change applies (OSError: not kept)."""
        body = {key: value for key, value in body.items() if key != "reset_counters"}
        if not body:
            return
        if self.path is not None:
            write_file(self.path, json.dumps([*self.bodies, body]) + "\n")
        self.bodies.append(body)
