"""The debug log (`--debug-log FILE` or `$SPECTOP_DEBUG_LOG`): unexpected errors with their tracebacks.
Without it, records go nowhere: a full-screen app must not be scribbled on."""

from __future__ import annotations

import logging
import os
from pathlib import Path

ENV_VARIABLE = "SPECTOP_DEBUG_LOG"
LOGGER_NAME = "tui"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_handler: logging.Handler | None = None


def debug_log_path(option: str | os.PathLike[str] | None) -> Path | None:
    """The file the debug log goes to: the option, else the environment variable, else None (off)."""
    chosen = option if option else os.environ.get(ENV_VARIABLE)
    return Path(chosen).expanduser() if chosen else None


def start_debug_log(option: str | os.PathLike[str] | None = None) -> Path | None:
    """The `tui` logger's records (DEBUG and up) appended to `path`; None when off; OSError."""
    global _handler
    path = debug_log_path(option)
    stop_debug_log()
    if path is None:
        return None
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    _handler = handler
    logger.info("debug log started (pid %d)", os.getpid())
    return path


def stop_debug_log() -> None:
    global _handler
    if _handler is not None:
        logger = logging.getLogger(LOGGER_NAME)
        logger.removeHandler(_handler)
        _handler.close()
        _handler = None
