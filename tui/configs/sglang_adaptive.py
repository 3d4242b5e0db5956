"""SGLang's adaptive speculative steps: `--speculative-adaptive` with `--speculative-adaptive-config FILE`
(sgl PRs #21599, #23336, #24055; reference engines-2026-12.md §3, sglang-server-args.md).
The file is JSON, one set of keys or one per batch size (`{"<bs>": {...}}`); the server starts at the
middle candidate step and moves between them by an EMA of the acceptance, with hysteresis."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypeGuard

from tui.bounded_read import read_bounded

DEFAULT_CANDIDATE_STEPS = (1, 3, 7)
KNOWN_KEYS = frozenset({"candidate_steps", "ema_alpha", "warmup_batches", "update_interval"})
MAX_FILE_BYTES = 1 << 16


def _threshold(key: str) -> bool:
    """A number of the EMA's rules: its thresholds (upstream: up/down_hysteresis) and its ceiling."""
    return "threshold" in key or "hysteresis" in key or key == "ceiling_coeff"


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _whole(value: Any, low: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= low


def _steps(value: Any) -> TypeGuard[list[int]]:
    return isinstance(value, list) and bool(value) and all(_whole(step, 0) for step in value)


def tiers(settings: dict[str, Any]) -> list[int]:
    """The candidate steps of one set of settings (the default when absent)."""
    steps = settings.get("candidate_steps")
    return sorted(set(steps)) if _steps(steps) else list(DEFAULT_CANDIDATE_STEPS)


def sections(config: Any) -> dict[str, dict[str, Any]] | None:
    """{"": settings} for one set of keys, {"<bs>": settings} per batch size; None when neither."""
    if not isinstance(config, dict):
        return None
    if config and all(isinstance(key, str) and key.isdigit() for key in config):
        return dict(config) if all(isinstance(value, dict) for value in config.values()) else None
    return {"": config}


def problems(config: Any) -> list[str]:
    """What SGLang would refuse or ignore in an adaptive config (empty: it reads)."""
    found = sections(config)
    if found is None:
        return ['expected an object of settings, or one per batch size ({"<bs>": {...}})']
    out: list[str] = []
    for batch, settings in found.items():
        where = f"batch size {batch}: " if batch else ""
        steps = settings.get("candidate_steps")
        if steps is not None and not _steps(steps):
            out.append(f"{where}candidate_steps must be a list of whole numbers >= 0, such as [1, 3, 7]")
        elif isinstance(steps, list) and steps != sorted(set(steps)):
            out.append(f"{where}candidate_steps {steps} should rise without repeats")
        alpha = settings.get("ema_alpha")
        if alpha is not None and not (_number(alpha) and 0 < alpha <= 1):
            out.append(f"{where}ema_alpha must be in (0, 1]")
        for key, low in (("warmup_batches", 0), ("update_interval", 1)):
            if key in settings and not _whole(settings[key], low):
                out.append(f"{where}{key} must be a whole number >= {low}")
        for key, value in settings.items():
            if _threshold(key) and not _number(value):
                out.append(f"{where}{key} must be a number")
            elif key not in KNOWN_KEYS and not _threshold(key):
                out.append(f"{where}unknown key {key!r} (SGLang ignores it)")
    return out


def read_config(path: Path) -> tuple[Any, str | None]:
    """The parsed adaptive config file, or None and why it could not be read."""
    try:
        raw = read_bounded(path, MAX_FILE_BYTES, ValueError)
    except ValueError as error:
        return None, str(error)
    try:
        return json.loads(raw), None
    except ValueError as error:  # a UnicodeDecodeError or a JSONDecodeError
        return None, f"{path} is not JSON: {error}"


def candidate_steps(settings: dict[str, Any]) -> tuple[int, ...] | None:
    """The tiers an SGLang config with `speculative_adaptive` moves between (every batch size's); () when
    its file cannot be read here (a relative path is the server's to resolve); None when not adaptive."""
    if settings.get("speculative_adaptive") is not True:
        return None
    name = settings.get("speculative_adaptive_config")
    if not name:
        return DEFAULT_CANDIDATE_STEPS
    path = Path(str(name)).expanduser()
    config, why = read_config(path) if path.is_absolute() else (None, "relative")
    found = sections(config) if why is None and not problems(config) else None
    if found is None:
        return ()
    return tuple(sorted({step for section in found.values() for step in tiers(section)}))
