"""Parsing the burst options: SLOs, percentiles, per-arm request fields and the schedule. No I/O."""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import urlsplit

from tui.bench.explain import Slo
from tui.bench.prompts import OptionError
from tui.bench.results import Schedule

MAX_EXTRA_CHARS = 10_000
_UNITS = {"ms": 0.001, "s": 1.0, "": 0.001}  # a bare number is milliseconds
_SLO_NAMES = ("ttft", "tpot", "e2e")
# Fields spectop sets itself: an arm's extra fields may not replace them (the arms would not be comparable).
RESERVED_FIELDS = frozenset({"messages", "prompt", "text", "stream", "stream_options", "max_tokens", "model"})


def parse_slo(text: str) -> Slo:
    """`ttft=500ms,tpot=40ms,e2e=10s` (a bare number is milliseconds)."""
    limits: dict[str, float] = {}
    for part in filter(str.strip, text.split(",")):
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep or name not in _SLO_NAMES:
            raise OptionError(f"--slo {part.strip()!r}: expected ttft=…, tpot=… or e2e=… (e.g. ttft=500ms)")
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s)?\s*", value.lower())
        if match is None:
            raise OptionError(f"--slo {part.strip()!r}: expected a duration such as 500ms or 10s")
        seconds = float(match.group(1)) * _UNITS[match.group(2) or ""]
        if not math.isfinite(seconds) or seconds <= 0:
            raise OptionError(f"--slo {part.strip()!r}: the limit must be more than 0")
        if name in limits:
            raise OptionError(f"--slo: {name} given twice")
        limits[name] = seconds
    if not limits:
        raise OptionError("--slo: expected at least one of ttft=…, tpot=…, e2e=…")
    return Slo(ttft_s=limits.get("ttft"), tpot_s=limits.get("tpot"), e2e_s=limits.get("e2e"))


def parse_percentiles(text: str) -> tuple[float, ...]:
    """`50,90,99,99.9` -> (50.0, 90.0, 99.0, 99.9), sorted, each in 0..100."""
    values: list[float] = []
    for part in filter(str.strip, text.split(",")):
        try:
            value = float(part)
        except ValueError:
            raise OptionError(f"--percentiles {part.strip()!r}: expected a number such as 99.9") from None
        if not math.isfinite(value) or not 0 <= value <= 100:
            raise OptionError(f"--percentiles {part.strip()!r}: expected a number from 0 to 100")
        values.append(value)
    if not values:
        raise OptionError("--percentiles: expected numbers such as 50,90,99")
    return tuple(sorted(set(values)))


def parse_extra(text: str, option: str) -> dict[str, Any]:
    """A JSON object of request fields for one arm (`--a-extra '{"enable_speculative": false}'`)."""
    if len(text) > MAX_EXTRA_CHARS:
        raise OptionError(f"{option}: longer than {MAX_EXTRA_CHARS} characters")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise OptionError(f"{option}: not valid JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(data, dict):
        raise OptionError(f'{option}: expected a JSON object such as {{"enable_speculative": false}}')
    reserved = sorted(RESERVED_FIELDS & set(data))
    if reserved:
        raise OptionError(f"{option}: {', '.join(reserved)} is set by spectop for both arms")
    return data


def _host(url: str) -> str | None:
    try:
        host = urlsplit(url if "://" in url else f"http://{url}").hostname
    except ValueError:
        return None
    return "localhost" if host in ("localhost", "::1", "0.0.0.0") or (host or "").startswith("127.") else host


def choose_schedule(requested: str | None, url_a: str, url_b: str | None) -> tuple[Schedule, str]:
    """The schedule and why; default alternate (two URLs may share hardware under different names)."""
    if url_b is None:
        return "alternate", "one arm"
    same = _host(url_a) is not None and _host(url_a) == _host(url_b)
    where = f"both arms on {_host(url_a)}" if same else "arms on different hosts"
    if requested == "parallel":
        compete = ": they compete for the same hardware" if same else ""
        return "parallel", f"parallel (asked for; {where}{compete})"
    if requested not in (None, "alternate"):
        raise OptionError(f"--schedule {requested!r}: expected alternate or parallel")
    if requested == "alternate":
        return "alternate", f"alternate (asked for; {where})"
    return "alternate", f"alternate (default; {where}): arms never overlap; parallel: separate machines"


def arms_differ_by(
    url_a: str, url_b: str | None, extra_a: dict[str, Any], extra_b: dict[str, Any]
) -> str | None:
    """What the report says the arms differ by, when they share one URL."""
    if url_b is None or url_a.rstrip("/") != url_b.rstrip("/"):
        return None
    if extra_a == extra_b:
        return "both arms are the same URL with the same request fields: an A/A comparison"
    fields = sorted(set(extra_a) | set(extra_b))
    return f"one URL: the arms differ by request fields ({', '.join(fields)}), not by server"
