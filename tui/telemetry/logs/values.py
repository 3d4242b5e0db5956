"""Reading the numbers printed in log fields: `387.9 tokens/s`, `34.6%`, `2 reqs`, `nan`, `True`."""

from __future__ import annotations

_INFINITIES = (float("inf"), float("-inf"))


def parse_number(text: str) -> float | None:
    """The number in a field value with its unit dropped (`387.9 tokens/s`, `2 reqs`); a percentage
    becomes a fraction; `nan`, `inf` and garbage give None."""
    value = text.strip()
    space = value.find(" ")
    if space > 0:  # units always follow a space
        value = value[:space]
    scale = 1.0
    if value.endswith("%"):
        value = value[:-1]
        if value[-1:].isdigit() and "e" not in value and "E" not in value:
            value += "e-2"  # scale the decimal text itself: 0.7% is 0.007 exactly, not 0.006999...
        else:
            scale = 0.01
    try:
        number = float(value)
    except ValueError:
        return None
    if number != number or number in _INFINITIES:
        return None
    return number * scale if scale != 1.0 else number


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
