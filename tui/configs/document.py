"""Round-trip config documents: read, change one key, write back every other byte unchanged.
TOML goes through tomlkit (which keeps comments, order and layout); JSON is parsed into a tree that
remembers where every key and value sits (after `json.loads` accepted it), and a new literal is spliced in
at the value's span. Documents are immutable: a change returns a new document (undo is a stack of texts)."""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # there at run time; typeshed omits it
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
from tomlkit.items import String, StringType

from tui.configs.errors import ConfigSyntaxError, KeyPathError
from tui.configs.kinds import ConfigKind, detect_kind

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
    if char in "{[":
        return _parse_container(text, index)
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


def _parse_container(text: str, index: int) -> JsonNode:
    """An object (a `JsonObject`, its members' spans kept) or an array, from its `{` or `[` at `index`."""
    is_object = text[index] == "{"
    node = JsonObject(index, index, {}) if is_object else JsonNode(index, index, [])
    index = _skip(text, index + 1)
    while text[index] not in "}]":
        if isinstance(node, JsonObject):
            key, key_end = scanstring(text, index + 1)
            child = _parse_value(text, _skip(text, key_end) + 1)  # past the colon
            node.members.append(JsonMember(key, index, key_end, child))
            node.value[key] = child.value
        else:
            child = _parse_value(text, index)
            node.value.append(child.value)
        index = _skip(text, child.end)
        if text[index] == ",":
            index = _skip(text, index + 1)
    node.end = index + 1
    return node


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


KeyPath = tuple[str, ...]


def parse_key_path(dotted: str) -> KeyPath:
    """`speculative.num_speculative_tokens` -> ("speculative", "num_speculative_tokens")."""
    parts = tuple(part.strip() for part in dotted.split("."))
    if not dotted.strip() or any(not part for part in parts):
        raise KeyPathError(
            f"bad key {dotted!r}: expected a dotted path such as speculative.num_speculative_tokens"
        )
    return parts


def dotted(path: KeyPath) -> str:
    return ".".join(path)


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def lookup(data: Any, path: KeyPath) -> Any:
    """The value at a path in plain data; KeyPathError when absent."""
    node = data
    for depth, key in enumerate(path):
        if not isinstance(node, dict) or key not in node:
            raise KeyPathError(f"no key {dotted(path[: depth + 1])!r} in this file")
        node = node[key]
    return node


class ConfigDocument(ABC):
    """One parsed config file. `text` is exactly what is (or will be) on disk; `data` the plain Python data
    (dicts, lists, scalars) it holds."""

    def __init__(self, text: str, kind: ConfigKind, data: dict[str, Any]) -> None:
        self.text = text
        self.kind = kind
        self.data = data

    def get(self, path: KeyPath) -> Any:
        return lookup(self.data, path)

    def has(self, path: KeyPath) -> bool:
        try:
            lookup(self.data, path)
        except KeyPathError:
            return False
        return True

    @abstractmethod
    def with_value(self, path: KeyPath, value: Any) -> ConfigDocument:
        """A new document with `path` set (created when missing); the rest of the text unchanged."""

    @abstractmethod
    def without(self, path: KeyPath) -> ConfigDocument:
        """A new document with `path` removed."""

    @abstractmethod
    def line_of(self, path: KeyPath) -> int | None:
        """1-based line where the key is written, or None."""


# --- TOML --------------------------------------------------------------------------------------------------

_TABLE_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY_PART = r"""(?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)"""
_KEY_LINE = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")


def _split_toml_key(raw: str) -> KeyPath:
    parts = re.findall(r""""([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+)""", raw)
    return tuple(a or b or c for a, b, c in parts)


def _same_string_style(old: Any, value: Any) -> Any:
    """A new string keeps the old one's literal ('...') quoting when it can be written that way."""
    literal = isinstance(old, String) and old.type == StringType.SLL
    if literal and isinstance(value, str) and "'" not in value and "\n" not in value and "\r" not in value:
        return tomlkit.string(value, literal=True)
    return value


_CLOSERS = {"[": "]", "{": "}"}


def _unclosed(text: str) -> tuple[str, int, int] | None:
    """The last bracket of `text` left open (outside strings and comments): (it, line, column), 1-based."""
    stack: list[tuple[str, int, int]] = []
    line, column, quote, index = 1, 0, "", 0
    while index < len(text):
        char = text[index]
        column += 1
        if char == "\n":
            line, column = line + 1, 0
            if len(quote) == 1:
                quote = ""  # a one-line string ends here (tomlkit reports the string itself)
        elif quote:
            if char == "\\" and quote[0] == '"':
                index += 1
            elif text.startswith(quote, index):
                index += len(quote) - 1
                quote = ""
        elif char == "#":
            end = text.find("\n", index)
            index = (len(text) if end < 0 else end) - 1
            column = -1
        elif char in "\"'":
            quote = char * 3 if text.startswith(char * 3, index) else char
            index += len(quote) - 1
        elif char in _CLOSERS:
            stack.append((char, line, column))
        elif char in "]}" and stack and _CLOSERS[stack[-1][0]] == char:
            stack.pop()
        index += 1
    return stack[-1] if stack else None


def _toml_syntax_error(text: str, error: Exception, line: int, column: int) -> tuple[str, int, int]:
    """tomlkit's error as the writer means it: `missing ']' to close the table header [speculative`."""
    reason = str(error).split(" at line ")[0]
    lines = text.splitlines()
    written = lines[line - 1] if 0 < line <= len(lines) else ""
    code = written.split("#", 1)[0].rstrip()
    header = code.lstrip()
    unexpected = reason.startswith("Unexpected character")
    if unexpected and header.startswith("[") and "=" not in header and not header.endswith("]"):
        closer, what = ("]]", "array-of-tables header") if header.startswith("[[") else ("]", "table header")
        return f"missing '{closer}' to close the {what} {header}", line, len(code) + 1
    if "Control characters" in reason and column > len(written):
        return "missing the closing quote: the string runs to the end of the line", line, column
    at_end = "\\x00" in reason  # tomlkit's end of the text
    opened = _unclosed(text if at_end else "\n".join([*lines[: line - 1], written[: column - 1]]))
    if opened is not None and (opened[1] < line or at_end):
        bracket, at_line, at_column = opened
        what = "array" if bracket == "[" else "inline table"
        return f"missing '{_CLOSERS[bracket]}' to close the {what} opened here", at_line, at_column
    if reason == "Unexpected character: '\\n'":
        if code.endswith("="):
            return "missing the value after '='", line, column
        return "unexpected end of the line", line, column
    return reason, line, column


class TomlDocument(ConfigDocument):
    def __init__(self, text: str, kind: ConfigKind = "vllm_toml") -> None:
        try:
            parsed = tomlkit.parse(text)
        except tomlkit.exceptions.ParseError as error:
            # tomlkit counts columns from 0
            raise ConfigSyntaxError(*_toml_syntax_error(text, error, error.line, error.col + 1)) from None
        super().__init__(text, kind, parsed.unwrap())

    def with_value(self, path: KeyPath, value: Any) -> TomlDocument:
        doc = tomlkit.parse(self.text)
        container: Any = doc
        for depth, key in enumerate(path[:-1]):
            if key not in container:
                container.add(key, tomlkit.table())
            container = container[key]
            if not isinstance(container, dict):
                raise KeyPathError(f"{dotted(path[: depth + 1])!r} is a value, not a table")
        if path[-1] in container:
            container[path[-1]] = _same_string_style(container.get(path[-1]), value)
        else:
            item = tomlkit.item(value)
            if newline_of(self.text) == "\r\n":
                item.trivia.trail = "\r\n"  # the new line ends as the file's lines do
            container[path[-1]] = item
        return TomlDocument(tomlkit.dumps(doc), self.kind)

    def without(self, path: KeyPath) -> TomlDocument:
        doc = tomlkit.parse(self.text)
        container: Any = doc
        for key in path[:-1]:
            container = container[key]
        if not isinstance(container, dict) or path[-1] not in container:
            raise KeyPathError(f"no key {dotted(path)!r} in this file")
        del container[path[-1]]
        return TomlDocument(tomlkit.dumps(doc), self.kind)

    def line_of(self, path: KeyPath) -> int | None:
        table: KeyPath = ()
        for number, line in enumerate(self.text.splitlines(), start=1):
            header = _TABLE_HEADER.match(line)
            if header:
                table = _split_toml_key(header.group(1))
                if table == path:
                    return number
                continue
            key = _KEY_LINE.match(line)
            if key:
                full = table + _split_toml_key(key.group(1))
                if full == path[: len(full)]:
                    return number
        return None


def _indent_unit(text: str) -> str:
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def _line_indent(text: str, index: int) -> str:
    before = text[text.rfind("\n", 0, index) + 1 : index]
    return before[: len(before) - len(before.lstrip(" \t"))]


class JsonDocument(ConfigDocument):
    def __init__(self, text: str, kind: ConfigKind) -> None:
        self._tree = parse_json_tree(text)
        super().__init__(text, kind, self._tree.value)

    def _literal(self, value: Any, indent: str) -> str:
        """`value` as JSON laid out as the document is (a nested value indented like its lines)."""
        if isinstance(value, dict | list) and value and "\n" in self.text.strip():
            unit = _indent_unit(self.text)
            literal = json.dumps(value, ensure_ascii=False, indent=len(unit.expandtabs(4)))
            if unit.startswith("\t"):
                literal = re.sub(r"(?m)^( {4})+", lambda m: "\t" * (len(m.group()) // 4), literal)
            literal = literal.replace("\n", newline_of(self.text) + indent)
        else:
            literal = json.dumps(value, ensure_ascii=False)
        # Characters some editors treat as line ends (only possible inside JSON strings) are escaped.
        return literal.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")

    def _object_at(self, path: KeyPath) -> JsonObject:
        node = self._tree
        for depth, key in enumerate(path):
            member = node.member(key)
            if member is None or not isinstance(member.node, JsonObject):
                raise KeyPathError(f"{dotted(path[: depth + 1])!r} is not an object in this file")
            node = member.node
        return node

    def with_value(self, path: KeyPath, value: Any) -> JsonDocument:
        # Find the deepest existing object on the path; create the rest as one nested value.
        depth = 0
        node = self._tree
        while depth < len(path) - 1:
            member = node.member(path[depth])
            if member is None:
                break
            if not isinstance(member.node, JsonObject):
                raise KeyPathError(f"{dotted(path[: depth + 1])!r} is a value, not an object")
            node = member.node
            depth += 1
        new_value: Any = value
        for key in reversed(path[depth + 1 :]):
            new_value = {key: new_value}
        key = path[depth]
        text = self.text
        member = node.member(key)
        if member is not None:
            indent = _line_indent(text, member.key_start)
            literal = self._literal(new_value, indent)
            text = text[: member.node.start] + literal + text[member.node.end :]
            return JsonDocument(text, self.kind)
        entry_key = json.dumps(key, ensure_ascii=False)
        if node.members:
            last = node.members[-1]
            first = node.members[0]
            multiline = "\n" in text[node.start : first.key_start]
            indent = _line_indent(text, last.key_start) if multiline else ""
            separator = text[last.key_end : last.node.start]
            lead = newline_of(text) + indent if multiline else " "
            entry = f",{lead}{entry_key}{separator}{self._literal(new_value, indent)}"
            text = text[: last.node.end] + entry + text[last.node.end :]
        elif "\n" not in text.strip():  # a one-line document stays on one line
            entry = f"{entry_key}: {json.dumps(new_value, ensure_ascii=False)}"
            text = text[: node.start + 1] + entry + text[node.end - 1 :]
        else:
            parent_indent = _line_indent(text, node.start)
            indent = parent_indent + _indent_unit(text)
            newline = newline_of(text)
            literal = self._literal(new_value, indent)
            entry = f"{newline}{indent}{entry_key}: {literal}{newline}{parent_indent}"
            text = text[: node.start + 1] + entry + text[node.end - 1 :]
        return JsonDocument(text, self.kind)

    def without(self, path: KeyPath) -> JsonDocument:
        node = self._object_at(path[:-1])
        index = next((i for i, m in enumerate(node.members) if m.key == path[-1]), None)
        if index is None:
            raise KeyPathError(f"no key {dotted(path)!r} in this file")
        members = node.members
        text = self.text
        if len(members) == 1:
            text = text[: node.start + 1] + text[node.end - 1 :]
        elif index < len(members) - 1:
            text = text[: members[index].key_start] + text[members[index + 1].key_start :]
        else:
            text = text[: members[index - 1].node.end] + text[members[index].node.end :]
        return JsonDocument(text, self.kind)

    def line_of(self, path: KeyPath) -> int | None:
        node: Any = self._tree
        line = None
        for key in path:
            if not isinstance(node, JsonObject):
                break
            member = node.member(key)
            if member is None:
                break
            line = line_column(self.text, member.key_start)[0]
            node = member.node
        return line


def load_document(text: str, kind: ConfigKind | None = None, path: Path | None = None) -> ConfigDocument:
    """Parse a config text. Raises ConfigSyntaxError (with line/column) or KindError."""
    kind = kind or detect_kind(text, path)
    return TomlDocument(text, kind) if kind == "vllm_toml" else JsonDocument(text, kind)
