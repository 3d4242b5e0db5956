"""Errors raised by the config core; each message names what was expected."""

from __future__ import annotations


class ConfigError(Exception):
    """A config file or value that cannot be used."""


class ConfigSyntaxError(ConfigError):
    """The file does not parse. `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.reason = message
        self.line = line
        self.column = column


class KindError(ConfigError):
    """The kind of a config file cannot be told (or the forced kind does not fit)."""


class KeyPathError(ConfigError):
    """A dotted key that does not exist or cannot be set."""


class UnreadableFileError(ConfigError):
    """The file cannot be read at all (missing, a folder, no permission)."""
