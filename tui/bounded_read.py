"""Reading a file whole, capped: what spectop reads from disk is untrusted and may be any size."""

from __future__ import annotations

from pathlib import Path


def read_bounded(path: Path, limit: int, error: type[Exception], too_large: str = "") -> bytes:
    """The file's bytes, or `error` saying why not (unreadable, or larger than `limit`)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as failure:
        raise error(f"{path}: cannot read: {failure.strerror or failure}") from failure
    if len(raw) > limit:
        raise error(f"{path}: larger than {limit} bytes{too_large}")
    return raw


def read_text(
    path: Path, limit: int, error: type[Exception], too_large: str = "", encoding: str = "utf-8"
) -> str:
    try:
        return read_bounded(path, limit, error, too_large).decode(encoding)
    except UnicodeDecodeError as failure:
        raise error(f"{path}: not UTF-8 text (byte {failure.start})") from failure
