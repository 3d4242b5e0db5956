"""`spectop edit FILE`: the config editor screen on its own."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from tui.commands import fail, require_terminal, run_until_quit, say
from tui.configs.errors import ConfigError
from tui.configs.kinds import parse_kind
from tui.ui.editor_app import EditorApp
from tui.validators import normalize_http_url, scheme_was_added


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "edit",
        help="edit a config.toml / settings.json in a form or raw view, with lint, diff and safe saves",
        description="Open the config editor on FILE. ctrl+s saves (after showing the diff); with "
        "--restart-command, 'Save & restart' runs it and waits for --health-url.",
    )
    parser.add_argument("file", type=Path, metavar="FILE")
    parser.add_argument("--kind", help="force the kind: vllm_toml | sglang_json | client_json")
    parser.add_argument(
        "--restart-command",
        metavar="CMD",
        help="run (without a shell) by 'Save & restart', e.g. 'systemctl restart vllm'",
    )
    parser.add_argument("--health-url", metavar="URL", help="polled after a restart until the server answers")
    parser.add_argument(
        "--health-timeout", type=float, default=30.0, metavar="S", help="stop waiting after S s (default 30)"
    )
    parser.add_argument("--log-file", type=Path, metavar="FILE", help="server log, shown on failure")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        kind = parse_kind(args.kind) if args.kind else None
    except ConfigError as error:
        return fail("edit", str(error))
    if not args.file.is_file():
        return fail("edit", f"{args.file}: no such file")
    restart = shlex.split(args.restart_command) if args.restart_command else None
    health_url = None
    if args.health_url is not None:
        try:
            health_url = normalize_http_url(args.health_url)  # the one URL rule (settings, snapshot, bench)
        except ValueError as error:
            return fail("edit", f"--health-url: {error}")
        if scheme_was_added(args.health_url, health_url):
            say("edit", f"--health-url: no scheme given; using {health_url}")
    if args.health_timeout <= 0:
        return fail("edit", "--health-timeout must be > 0")
    require_terminal("edit")
    app = EditorApp(
        args.file,
        kind=kind,
        restart_command=restart,
        health_url=health_url,
        log_file=args.log_file,
        health_timeout_s=args.health_timeout,
    )
    return run_until_quit(app)
