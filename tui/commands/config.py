"""`spectop config show|get|set|lint|launch FILE`: the config editor without a screen."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tui.commands import fail, say
from tui.configs.atomic import ReadOnlyFileError, file_lock
from tui.configs.document import parse_key_path
from tui.configs.editing import get_value, open_config, save_text, set_raw_value, unified_diff
from tui.configs.errors import ConfigError, UnreadableFileError
from tui.configs.kinds import KIND_TITLES, parse_kind
from tui.configs.launch import render_launch
from tui.configs.lint import GPU_CHECKED_KINDS, gpu_findings, has_errors, lint_document, sort_findings
from tui.configs.schemas import field_specs, shown_value, unknown_keys
from tui.gpu.models import GpuUnavailable
from tui.gpu.monitor import read_once
from tui.paths import sample_configs_dir
from tui.sanitize import json_safe, safe_line, safe_text

# `spectop config example NAME`: the sample configs shipped with spectop (also inside an installed wheel).
EXAMPLES = {
    "vllm": ("config.toml", "vLLM-style server config, DeepSeek MTP on"),
    "vllm-off": ("config_mtp_off.toml", "the same with speculation off (the baseline of an A/B run)"),
    "sglang": ("sglang_settings.json", "SGLang server settings, EAGLE/MTP speculation"),
    "client": ("client_settings.json", "a benchmark client's settings (spectop bench --client-settings)"),
    "spectop": ("spectop.toml", "spectop's own settings: endpoints, alerts, the guard"),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config",
        help="show, query, change, lint a server/client config file, or print its launch command",
        description="Work with a vLLM-style config.toml, an SGLang settings.json or a client settings.json "
        "without opening the editor. Every byte you do not change stays as it was.",
    )
    actions = parser.add_subparsers(dest="config_action", metavar="ACTION", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("file", type=Path, metavar="FILE")
        sub.add_argument("--kind", help="force the kind: vllm_toml | sglang_json | client_json")
        return sub

    add("show", "print the file's kind, every known field with its value and help, and unknown keys")
    get = add("get", "print one value")
    get.add_argument("key", metavar="KEY", help="dotted path, e.g. speculative.num_speculative_tokens")
    set_parser = add("set", "change one value in place (validated; prints the diff)")
    set_parser.add_argument("key", metavar="KEY", help="dotted path, e.g. speculative.num_speculative_tokens")
    set_parser.add_argument("value", metavar="VALUE", help='TOML/JSON literal (2, 0.85, true, "x") or text')
    set_parser.add_argument("--dry-run", action="store_true", help="print the diff, do not write")
    set_parser.add_argument(
        "--new-key", action="store_true", help="add a key the schema does not know (else refused as a typo)"
    )
    set_parser.add_argument(
        "--force", action="store_true", help="replace the file even when its mode makes it read-only"
    )
    lint = add("lint", "advice with ids, severities, lines and fixes; exit 1 when an error is found")
    lint.add_argument("--json", action="store_true", help="one JSON array of findings")
    lint.add_argument(
        "--gpu-metrics-url",
        metavar="URL",
        help="check the memory headroom against the GPUs on this DCGM exporter page (default: NVML)",
    )
    lint.add_argument("--no-gpu", action="store_true", help="do not read the GPUs for the headroom check")
    launch = add("launch", "print the command that starts the server (or vLLM/SGLang --config YAML)")
    launch.add_argument("--format", choices=("cli", "yaml"), default="cli")
    example_help = "print a sample config to start from: " + ", ".join(EXAMPLES)
    example = actions.add_parser(
        "example",
        help=example_help,
        description="Print a sample config shipped with spectop, to start from "
        "(e.g. spectop config example vllm > config.toml): "
        + "; ".join(f"{name}, {file}: {what}" for name, (file, what) in EXAMPLES.items())
        + ".",
    )
    example.add_argument("name", metavar="NAME", choices=tuple(EXAMPLES), help=" | ".join(EXAMPLES))
    parser.set_defaults(func=run)


def _error(message: str, code: int = 1) -> int:
    return fail("config", safe_text(message), code)


def _show_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2 if isinstance(value, dict | list) else None, ensure_ascii=False)


def run(args: argparse.Namespace) -> int:
    try:
        kind = parse_kind(args.kind) if getattr(args, "kind", None) else None
        return _ACTIONS[args.config_action](args, kind)
    except UnreadableFileError as error:
        return _error(str(error), 2)  # like any command given a file it cannot read (README: exit codes)
    except ConfigError as error:
        return _error(str(error))


def _open(args: argparse.Namespace, kind: Any) -> Any:
    opened = open_config(args.file, kind)
    if opened.syntax_error is not None:
        raise ConfigError(f"{args.file}: {opened.syntax_error}")
    return opened


def _show(args: argparse.Namespace, kind: Any) -> int:
    opened = _open(args, kind)
    doc = opened.document
    print(safe_line(f"{args.file}: {KIND_TITLES[opened.kind]} [{opened.kind}]"))
    for spec in field_specs(opened.kind):
        value = _show_value(doc.get(spec.path)) if doc.has(spec.path) else "–"
        value = json.dumps(doc.get(spec.path)) if spec.type == "literal" and doc.has(spec.path) else value
        limits = f" {spec.range_text}" if spec.range_text else ""
        print(safe_text(f"  {spec.key:<40} {value:<24} {spec.help}{limits}"))
    unknown = unknown_keys(opened.kind, doc.data)
    if unknown:
        print("unknown keys (kept as they are):")
        for path in unknown:
            print(safe_text(f"  {'.'.join(path):<40} {shown_value(path, _show_value(doc.get(path)))}"))
    return 0


def _get(args: argparse.Namespace, kind: Any) -> int:
    opened = _open(args, kind)
    path = parse_key_path(args.key)
    print(safe_text(shown_value(path, _show_value(get_value(opened.document, path)))))
    return 0


def _set(args: argparse.Namespace, kind: Any) -> int:
    # Under the file's lock: a `config set` of another key meanwhile waits, then reads this result.
    with file_lock(args.file) if not args.dry_run else contextlib.nullcontext():
        opened = _open(args, kind)
        changed = set_raw_value(opened.document, parse_key_path(args.key), args.value, new_key=args.new_key)
        diff = unified_diff(opened.text, changed.text, str(args.file))
        sys.stdout.write(safe_text(diff) or "no change\n")
        _print_findings(args.file, _new_findings(opened.document, changed), to=sys.stderr)
        if args.dry_run:
            say("config", f"dry run: nothing was written to {safe_line(str(args.file))}")
        if args.dry_run or not diff:
            return 0
        try:
            result = save_text(args.file, changed.text, opened.kind, opened.stamp, allow_read_only=args.force)
        except ReadOnlyFileError as error:
            return _error(f"{error}: not saved (--force replaces it anyway)")
    for warning in result.warnings:
        say("config", f"warning: {warning}")
    return 0


def _new_findings(before: Any, after: Any) -> list[Any]:
    """The lint findings a change causes: those of `after` that `before` did not have (by rule and key)."""
    had = {(finding.id, finding.key) for finding in lint_document(before)}
    return [finding for finding in lint_document(after) if (finding.id, finding.key) not in had]


def _print_findings(file: Path, findings: list[Any], to: Any = None) -> None:
    for finding in findings:
        where = f"{file}:{finding.line}" if finding.line else str(file)
        print(
            safe_line(f"{where}: {finding.severity} [{finding.id}] {finding.key}: {finding.message}"), file=to
        )
        print(safe_line(f"    fix: {finding.fix}"), file=to)


def _gpu_lint(args: argparse.Namespace, document: Any) -> tuple[list[Any], str | None]:
    """Headroom findings against the node's GPUs, or (no findings, why they were not checked)."""
    if args.no_gpu or document.kind not in GPU_CHECKED_KINDS:
        return [], None
    reading = asyncio.run(read_once(args.gpu_metrics_url))
    if isinstance(reading, GpuUnavailable):
        return [], f"GPU headroom not checked: {reading.reason}"
    return gpu_findings(document, reading.gpus), None


def _lint(args: argparse.Namespace, kind: Any) -> int:
    opened = _open(args, kind)
    gpu_found, not_checked = _gpu_lint(args, opened.document)
    findings = sort_findings([*lint_document(opened.document), *gpu_found])
    if not_checked is not None:
        print(f"{args.file}: info: {not_checked}", file=sys.stderr)
    if args.json:
        print(json_safe(json.dumps([asdict(finding) for finding in findings], indent=2, ensure_ascii=False)))
    else:
        _print_findings(args.file, findings)
        if not findings:
            print(safe_line(f"{args.file}: no findings"))
    return 1 if has_errors(findings) else 0


def _launch(args: argparse.Namespace, kind: Any) -> int:
    opened = _open(args, kind)
    print(safe_text(render_launch(opened.kind, opened.document.data, args.format).rstrip("\n")))
    return 0


def _example(args: argparse.Namespace, kind: Any) -> int:
    path = sample_configs_dir() / EXAMPLES[args.name][0]
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:  # an installation without its sample configs
        raise UnreadableFileError(
            f"cannot read the shipped example {path}: {error.strerror or error}"
        ) from None
    sys.stdout.write(safe_text(text))
    return 0


_ACTIONS = {"show": _show, "get": _get, "set": _set, "lint": _lint, "launch": _launch, "example": _example}
