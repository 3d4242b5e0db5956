"""A JSON tree that remembers where every key and value sits in the text.

Used for minimal edits: a changed value is spliced in place, so every byte the
user did not change (indentation, key order, escapes, line endings) stays as it was.
The text is checked with `json.loads` first, so this parser only sees valid JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # there at run time; typeshed omits it
from typing import Any

from tui.configs.errors import ConfigSyntaxError

_WHITESPACE = " \t\r\n"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


@dataclass
class JsonNode:
    start: int
    end: int  # exclusive
    value: Any = None


@dataclass
class JsonMember:
    key: str
    key_start: int
    key_end: int
    node: JsonNode


@dataclass
class JsonObject(JsonNode):
    members: list[JsonMember] = field(default_factory=list)

    def member(self, key: str) -> JsonMember | None:
        found = None
        for member in self.members:
            if member.key == key:
                found = member  # like json.loads, the last duplicate wins
        return found


@dataclass
class JsonArray(JsonNode):
    items: list[JsonNode] = field(default_factory=list)


def check_json(text: str) -> Any:
    """Parse with the standard library; raise ConfigSyntaxError with line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigSyntaxError(error.msg, error.lineno, error.colno) from None
    except RecursionError:
        raise ConfigSyntaxError("nested too deeply", 1, 1) from None


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _parse_value(text: str, index: int) -> JsonNode:
    index = _skip(text, index)
    char = text[index]
    if char == "{":
        return _parse_object(text, index)
    if char == "[":
        return _parse_array(text, index)
    if char == '"':
        value, end = scanstring(text, index + 1)
        return JsonNode(index, end, value)
    for word, value in _LITERALS.items():
        if text.startswith(word, index):
            return JsonNode(index, index + len(word), value)
    match = _NUMBER.match(text, index)
    if match is None:  # unreachable for text that passed check_json
        raise ConfigSyntaxError("expected a value", *line_column(text, index))
    return JsonNode(index, match.end(), json.loads(match.group()))


def _parse_object(text: str, index: int) -> JsonObject:
    node = JsonObject(index, index)
    index = _skip(text, index + 1)
    values: dict[str, Any] = {}
    if text[index] == "}":
        node.end, node.value = index + 1, values
        return node
    while True:
        key_start = _skip(text, index)
        key, key_end = scanstring(text, key_start + 1)
        index = _skip(text, key_end) + 1  # the colon
        child = _parse_value(text, index)
        node.members.append(JsonMember(key, key_start, key_end, child))
        values[key] = child.value
        index = _skip(text, child.end)
        if text[index] == "}":
            node.end, node.value = index + 1, values
            return node
        index += 1  # the comma


def _parse_array(text: str, index: int) -> JsonArray:
    node = JsonArray(index, index)
    index = _skip(text, index + 1)
    if text[index] == "]":
        node.end, node.value = index + 1, []
        return node
    while True:
        child = _parse_value(text, index)
        node.items.append(child)
        index = _skip(text, child.end)
        if text[index] == "]":
            node.end, node.value = index + 1, [item.value for item in node.items]
            return node
        index += 1


def parse_json_tree(text: str) -> JsonObject:
    """The span tree of a JSON document whose root must be an object."""
    check_json(text)
    start = _skip(text, 1 if text.startswith("\ufeff") else 0)
    root = _parse_value(text, start)
    if not isinstance(root, JsonObject):
        line, column = line_column(text, start)
        raise ConfigSyntaxError("expected a JSON object ({ ... }) at the top level", line, column)
    return root


def line_column(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column
