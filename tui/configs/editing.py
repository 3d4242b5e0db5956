"""A config file opened for editing (`config set`, the editor): load, change keys, diff, save safely."""

from __future__ import annotations

import asyncio
import difflib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.configs.atomic import FileStamp, SaveResult, atomic_write, changed_on_disk, file_lock
from tui.configs.document import ConfigDocument, KeyPath, dotted, load_document
from tui.configs.errors import ConfigError, ConfigSyntaxError, KeyPathError, UnreadableFileError
from tui.configs.kinds import ConfigKind, detect_kind
from tui.configs.schemas import (
    SchemaIssue,
    did_you_mean,
    is_secret_key,
    schema_knows,
    typed_value,
    validate_data,
)

MAX_CONFIG_BYTES = 4 * 1024 * 1024


class ChangedOnDiskError(ConfigError):
    """The file changed on disk since it was opened; saving would lose someone's edit."""


@dataclass
class OpenedConfig:
    """A file as read: its exact text, kind and stamp; `document` is None when it does not parse."""

    path: Path
    kind: ConfigKind
    text: str
    stamp: FileStamp
    document: ConfigDocument | None
    syntax_error: ConfigSyntaxError | None


def _decode(path: Path, data: bytes) -> str:
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: {len(data)} bytes; files over {MAX_CONFIG_BYTES} bytes are refused")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start})") from None


def _opened(path: Path, data: bytes, kind: ConfigKind | None) -> OpenedConfig:
    text = _decode(path, data)
    kind = kind or detect_kind(text, path)
    stamp = FileStamp.of_bytes(path, data)
    try:
        document = load_document(text, kind, path)
    except ConfigSyntaxError as error:
        return OpenedConfig(path, kind, text, stamp, None, error)
    return OpenedConfig(path, kind, text, stamp, document, None)


_FILE_TYPES = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _read_regular(path: Path) -> bytes:
    """The file's bytes (up to the limit + 1), opened non-blocking and refused unless a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise UnreadableFileError(f"{path}: {error.strerror or error}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = _FILE_TYPES.get(stat.S_IFMT(mode), "not a regular file")
            raise UnreadableFileError(f"{path}: {what}, not a regular file; spectop reads regular files only")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= MAX_CONFIG_BYTES:
            chunk = os.read(fd, MAX_CONFIG_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise UnreadableFileError(f"{path}: {error.strerror or error}") from None
    finally:
        os.close(fd)


def open_config(path: Path, kind: ConfigKind | None = None) -> OpenedConfig:
    """Read a config file (bytes exactly, no newline translation). Raises ConfigError."""
    return _opened(path, _read_regular(path), kind)


async def open_config_async(path: Path, kind: ConfigKind | None = None) -> OpenedConfig:
    """`open_config` for async code: the read runs in a worker thread."""
    return _opened(path, await asyncio.to_thread(_read_regular, path), kind)


def unified_diff(old: str, new: str, name: str) -> str:
    """The diff of two versions of a config file, credential values masked (`masked_diff`)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"{name} (on disk)", f"{name} (new)"
    )
    return masked_diff("".join(line if line.endswith("\n") else line + "\n" for line in lines))


# A diff line that sets a key: its marker (" ", "+", "-") and indentation, the key (bare or quoted, dotted),
# the separator (TOML =, YAML / JSON :), the value.
_KEY_LINE = re.compile(r"""^(?P<head>[ +-]\s*(?P<q>["']?)(?P<key>[\w.-]+)(?P=q)\s*[=:]\s*)\S""")


def masked_diff(diff: str) -> str:
    """`diff` with the values of credential keys (api_key, password, …) as `****`: diffs are recorded."""
    lines = []
    for line in diff.splitlines(keepends=True):
        match = None if line.startswith(("+++", "---", "@@")) else _KEY_LINE.match(line)
        if match and is_secret_key((match["key"].rsplit(".", 1)[-1].replace("-", "_"),)):
            line = match["head"] + "****" + line[len(line.rstrip("\r\n")) :]
        lines.append(line)
    return "".join(lines)


def new_issues(
    before: ConfigDocument, after: ConfigDocument, touched: KeyPath | None = None
) -> list[SchemaIssue]:
    """Schema issues `after` has that `before` did not (plus any at the touched key)."""
    old_paths = {issue.path for issue in validate_data(before.kind, before.data)}
    return [
        issue
        for issue in validate_data(after.kind, after.data)
        if issue.path not in old_paths or (touched is not None and issue.path[: len(touched)] == touched)
    ]


def get_value(doc: ConfigDocument, path: KeyPath) -> Any:
    """The value at `path`; KeyPathError (with "did you mean ...?" when a key is close) when absent."""
    try:
        return doc.get(path)
    except KeyPathError as error:
        raise KeyPathError(f"{error}{did_you_mean(doc.kind, path, doc.data, in_file_only=True)}") from None


def set_value(doc: ConfigDocument, path: KeyPath, value: Any, *, new_key: bool = False) -> ConfigDocument:
    """A new document with one key changed; ConfigError when that makes the file invalid, or when the key is
    unknown to both the schema and the file (a typo, most likely) without `new_key`."""
    after = doc.with_value(path, value)
    if not new_key and not doc.has(path) and not schema_knows(doc.kind, path):
        raise KeyPathError(
            f"unknown key {dotted(path)!r}: spectop's schema does not know it and the file does not have it"
            f"{did_you_mean(doc.kind, path, doc.data)} (to add it anyway: --new-key)"
        )
    problems = new_issues(doc, after, path)
    if problems:
        detail = "; ".join(f"{dotted(issue.path)}: {issue.message}" for issue in problems)
        raise ConfigError(f"{dotted(path)} = {value!r} is invalid: {detail}")
    return after


def set_raw_value(doc: ConfigDocument, path: KeyPath, raw: str, *, new_key: bool = False) -> ConfigDocument:
    """`set_value` with the value given as text (a TOML/JSON literal, else a string), typed by the schema."""
    return set_value(doc, path, typed_value(raw, doc.kind, path), new_key=new_key)


def save_text(
    path: Path,
    text: str,
    kind: ConfigKind,
    stamp: FileStamp | None,
    *,
    force: bool = False,
    allow_read_only: bool = False,
) -> SaveResult:
    """Check `text` parses and the file is unchanged since `stamp`, then write atomically; SaveError."""
    load_document(text, kind, path)  # raises ConfigSyntaxError: never save an unparsable file
    with file_lock(path):  # the check and the rename as one step against other spectop processes
        if not force and changed_on_disk(path, stamp):
            raise ChangedOnDiskError(f"{path} changed on disk since it was opened")
        return atomic_write(path, text.encode("utf-8"), allow_read_only=allow_read_only)
