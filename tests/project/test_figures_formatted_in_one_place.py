"""One vocabulary, enforced: numbers are turned into text only by tui/format.py. An AST walk over tui/ (the
simulator aside) finds every place that formats a number itself (`{x:.2f}`, `{x:.0%}`, `round()` in an
f-string, `"%.1f" % x`, ...); what is left is a wire format listed in `NOT_FIGURES` with its reason."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tui"
EXEMPT_FILES = {"tui/format.py"}
EXEMPT_FOLDERS = ("tui/sim/",)  # the simulator prints what vLLM / SGLang / llama.cpp print

# A precision, a float / general / percent / exponent type, or a thousands separator.
_NUMERIC_SPEC = re.compile(r"\.\d|[eEfFgGn%]$|[,_]")
_DATETIME_SPEC = re.compile(r"%[a-zA-Z]")
_PRINTF_FLOAT = re.compile(r"%[-+ #0]*\d*(\.\d+)?[eEfFgG]")

# (file, the formatted expression and its spec): why it is not a figure shown to a person.
NOT_FIGURES: dict[tuple[str, str], str] = {
    ("tui/fleet/client.py", "at:.3f"): "Prometheus API parameter (time), a wire format",
    ("tui/fleet/client.py", "start:.3f"): "Prometheus API parameter (start), a wire format",
    ("tui/fleet/client.py", "end:.3f"): "Prometheus API parameter (end), a wire format",
    ("tui/fleet/client.py", "step_s:g"): "Prometheus API parameter (step), a wire format",
    ("tui/fleet/client.py", "self.timeout_s:g"): "Prometheus API parameter (timeout), a wire format",
    ("tui/fleet/queries.py", "q:g"): "the quantile inside a PromQL query, a wire format",
    ("tui/commands/demo.py", "DEMO_KV_CACHE_TOKENS:,"): "a comment in the demo's sample config",
    ("tui/tune/result.py", "p:.4f"): "per-position rates in the CSV export, machine data",
    ("tui/bench/report/text.py", "q:g"): 'a percentile\'s key ("50", "p95"), a name, not a figure',
    ("tui/bench/report/summary.py", "q:g"): 'a percentile\'s key ("50", "p95"), a name, not a figure',
}

ADVICE = (
    "use a word of tui/format.py instead: fmt_rate / fmt_rate_delta (percent), fmt_times and "
    "fmt_times_interval (ratios), fmt_latency / fmt_duration / fmt_eta (time), fmt_tokens_per_s, "
    "fmt_per_s, fmt_length, fmt_count, fmt_gib, fmt_whole, fmt_bound (bucket edges), fmt_setting "
    "(a configured number echoed as typed); or add the word there. A wire format (query parameter, "
    "CSV column) goes into NOT_FIGURES in this test with its reason."
)


def _spec_text(spec: ast.expr | None) -> str:
    if not isinstance(spec, ast.JoinedStr):
        return ""
    return "".join(
        part.value if isinstance(part, ast.Constant) else "{" + ast.unparse(part.value) + "}"
        for part in spec.values
    )


def _is_round_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round"


def hand_formatted(source: str, path: str) -> list[tuple[int, str]]:
    """(line, what) for every number formatted by hand in `source`, the NOT_FIGURES entries aside."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FormattedValue):
            spec = _spec_text(node.format_spec)
            key = f"{ast.unparse(node.value)}:{spec}"
            shape = re.sub(r"\{[^}]*\}", "9", spec)  # a nested field ({digits}) counts as a number
            numeric = bool(shape) and _NUMERIC_SPEC.search(shape) and not _DATETIME_SPEC.search(shape)
            if (numeric or _is_round_call(node.value)) and (path, key) not in NOT_FIGURES:
                found.append((node.lineno, f"{{{key}}}" if spec else f"{{{ast.unparse(node.value)}}}"))
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and _PRINTF_FLOAT.search(node.left.value)
        ):
            found.append((node.lineno, f"{node.left.value!r} % ..."))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "format" and len(node.args) == 2:
                found.append((node.lineno, f"format({ast.unparse(node.args[0])}, ...)"))
            elif (
                isinstance(func, ast.Attribute)
                and func.attr == "format"
                and isinstance(func.value, ast.Constant)
                and isinstance(func.value.value, str)
                and re.search(r"\{[^}]*:[^}]*(\.\d|[eEfFgG%])[^}]*\}", func.value.value)
            ):
                found.append((node.lineno, f"{func.value.value!r}.format(...)"))
    return found


def _modules() -> list[tuple[str, Path]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name not in EXEMPT_FILES and not name.startswith(EXEMPT_FOLDERS):
            modules.append((name, path))
    return modules


def test_numbers_become_text_only_in_tui_format() -> None:
    strays = [
        f"{name}:{line}: {what}"
        for name, path in _modules()
        for line, what in hand_formatted(path.read_text(encoding="utf-8"), name)
    ]
    assert not strays, "figures formatted outside tui/format.py:\n  " + "\n  ".join(strays) + "\n" + ADVICE


def test_every_exception_is_still_there() -> None:
    """An entry of NOT_FIGURES whose code is gone is removed, so the list never hides a new stray."""
    seen: set[tuple[str, str]] = set()
    for name, path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FormattedValue):
                seen.add((name, f"{ast.unparse(node.value)}:{_spec_text(node.format_spec)}"))
    assert not set(NOT_FIGURES) - seen, f"stale NOT_FIGURES entries: {sorted(set(NOT_FIGURES) - seen)}"


def test_the_check_catches_each_way_of_formatting_a_number() -> None:
    source = """
rate = 0.712
a = f"{rate:.0%}"
b = f"{rate * 100:.1f}%"
c = f"{rate:g}"
d = f"{round(rate, 2)}"
e = "%.2f" % rate
f = format(rate, ".2f")
g = "{:.2f}".format(rate)
h = f"{rate:{width}.{digits}f}"
fine = f"{'name':>10} {when:%H:%M} {count} {rate!r}"
"""
    lines = sorted(line for line, _ in hand_formatted(source, "tui/example.py"))
    assert lines == [3, 4, 5, 6, 7, 8, 9, 10]
