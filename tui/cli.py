"""Command-line entry point: `spectop [COMMAND] ...`.

Each command lives in its own module under `tui.commands`, exposing
`register(subparsers)`; the module sets `func` on its parser to a callable
`(argparse.Namespace) -> int` (the exit code). Heavy imports happen inside
`func`, so `spectop --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tui import __version__
from tui.terminal import NoTerminalError

# Order is the order shown in `spectop --help`.
COMMAND_MODULES = (
    "tui.commands.demo",
    "tui.commands.snapshot",
    "tui.commands.logs",
    "tui.commands.sim",
    "tui.commands.config",
    "tui.commands.edit",
    "tui.commands.bench",
    "tui.commands.tune",
    "tui.commands.replay",
)


def installed_version() -> str:
    """The installed package's version (its metadata), or the source tree's when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("spectop")
    except PackageNotFoundError:
        return __version__


class _CompletionAction(argparse.Action):
    """`--completion SHELL`: print the completion script for the whole parser, then exit (like --version)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option: object = None,
    ) -> None:
        from tui.completion import completion_script

        sys.stdout.write(completion_script(parser, str(values)))
        parser.exit(0)


def add_meta_arguments(parser: argparse.ArgumentParser) -> None:
    from tui.completion import SHELLS

    parser.add_argument("--version", action="version", version=f"spectop {installed_version()}")
    parser.add_argument(
        "--completion",
        action=_CompletionAction,
        choices=SHELLS,
        metavar="SHELL",
        help="print a completion script for bash, zsh or fish and exit "
        '(e.g. eval "$(spectop --completion bash)")',
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spectop",
        description="Watch and tune speculative decoding on vLLM, SGLang, llama.cpp and "
        "OpenAI-compatible servers. Without a command, opens the live dashboard.",
    )
    add_meta_arguments(parser)
    from tui.commands import monitor

    monitor.add_monitor_arguments(parser)
    parser.set_defaults(func=monitor.run)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        # Every command ships with spectop: one that fails to import is a bug, never a missing command.
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except NoTerminalError as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `spectop logs big.log --json | head` must not print a traceback.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
