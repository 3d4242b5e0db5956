"""Building event models without validation, fast.

This is `BaseModel.model_construct` for these plain models (no aliases, no private attributes, no
`extra="allow"`, immutable defaults), with each model's defaults looked up once instead of on every
call: the same four attributes set the way pydantic's `model_construct` sets them (`object.__setattr__`).
Measured (`tests/bench/bench_log_parse.py`, CPU lines/s through `LogParser.feed`): with
`model_construct` the parser falls from about 820,000 to 570,000 lines/s on the typical mix and from
550,000 to 350,000 on the dense mix, close to the README's 300,000 target; this keeps the figures.
Measured again on the shared machine under load (300,000 lines, one run after the other): typical 443,000
(this) against 372,000 (`model_construct`), dense 291,000 against 209,000: plain `model_construct` misses
the target on the dense mix, so this stays.
`tests/telemetry/test_logs_fastpath.py` checks that the result equals `model_validate` of the same values.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)

_DEFAULTS: dict[type[BaseModel], dict[str, Any]] = {}
_new = object.__new__
_setattr = object.__setattr__  # as pydantic's model_construct: BaseModel.__setattr__ validates


def build(model: type[Model], **values: Any) -> Model:
    """An instance of `model` holding `values` (unvalidated) and the defaults of the other fields."""
    defaults = _DEFAULTS.get(model)
    if defaults is None:
        defaults = _DEFAULTS[model] = {
            name: field.get_default(call_default_factory=True) for name, field in model.model_fields.items()
        }
    instance = _new(model)
    _setattr(instance, "__dict__", defaults | values)  # the defaults' key order, as pydantic's own __dict__
    _setattr(instance, "__pydantic_fields_set__", set(values))
    _setattr(instance, "__pydantic_extra__", None)
    _setattr(instance, "__pydantic_private__", None)
    return instance
