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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spectop",
        description="Watch and tune speculative decoding on vLLM, SGLang, llama.cpp and "
        "OpenAI-compatible servers. Without a command, opens the live dashboard.",
    )
    parser.add_argument("--version", action="version", version=f"spectop {__version__}")
    from tui.commands import monitor

    monitor.add_monitor_arguments(parser)
    parser.set_defaults(func=monitor.run)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                continue  # command not built yet
            raise
        module.register(subparsers)
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
