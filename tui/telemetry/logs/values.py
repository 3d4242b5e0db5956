"""Reading the numbers printed in log fields: `387.9 tokens/s`, `34.6%`, `2 reqs`, `nan`, `True`."""

from __future__ import annotations

import math

_UNIT_SUFFIXES = (" tokens/s", " tokens", " reqs", " req", " tok/s", " GB", " ms", " s")


def parse_number(text: str) -> float | None:
    """The number in a field value with its unit dropped; `nan`, `inf` and garbage give None."""
    value = text.strip()
    for suffix in _UNIT_SUFFIXES:
        if value.endswith(suffix):
            value = value[: -len(suffix)]
            break
    percent = value.endswith("%")
    if percent:
        value = value[:-1]
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    # Round away float noise (0.7 / 100 = 0.006999...); logs print at most a few decimals.
    return round(number / 100.0, 12) if percent else number


def parse_count(text: str) -> int | None:
    number = parse_number(text)
    if number is None or number < 0:
        return None
    return int(number)


def parse_field_value(text: str) -> bool | int | float | str | None:
    """A SGLang / vLLM field value as its natural type: number (percent as a fraction), bool or text."""
    value = text.strip()
    if value == "True":
        return True
    if value == "False":
        return False
    number = parse_number(value)
    if number is not None:
        return int(number) if number.is_integer() and value.lstrip("-").isdigit() else number
    return value or None


def parse_float_list(text: str) -> list[float] | None:
    """`0.807, 0.612` or `(0.810, 0.476)`; an empty list `()` gives None."""
    inner = text.strip().strip("()").strip()
    if not inner:
        return None
    numbers: list[float] = []
    for item in inner.split(","):
        number = parse_number(item)
        if number is None:
            return None
        numbers.append(number)
    return numbers
