"""Command-line entry point: `spectop [COMMAND] ...`; each command's module under `tui.commands` has
`register(subparsers)`, which sets `func(args) -> exit code` on its parser."""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import NoReturn

import shtab

from tui import __version__
from tui.cli_options import complete_files
from tui.commands import NoTerminalError, monitor
from tui.debug_log import ENV_VARIABLE, start_debug_log, stop_debug_log
from tui.safe_output import sanitized_stdio

log = logging.getLogger(__name__)

# Order is the order shown in `spectop --help`.
COMMANDS = ("demo", "snapshot", "logs", "sim", "config", "edit", "bench", "tune", "replay", "autopilot")
COMMAND_MODULES = tuple(f"tui.commands.{name}" for name in COMMANDS)


def installed_version() -> str:
    """The installed package's version (its metadata), or the source tree's when it is not installed."""
    try:
        return version("spectop")
    except PackageNotFoundError:
        return __version__


class _CompletionAction(argparse.Action):
    """`--completion SHELL`: print shtab's completion script of the whole parser, then exit."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: object, values: object, *_: object
    ) -> None:
        sys.stdout.write(shtab.complete(build_parser(), shell=str(values)))
        parser.exit(0)


def add_debug_log_argument(parser: argparse.ArgumentParser, *, default: object = None) -> None:
    parser.add_argument(
        "--debug-log",
        metavar="FILE",
        default=default,
        help=f"append unexpected errors with their tracebacks to FILE (also ${ENV_VARIABLE}; off by default)",
    )


class _DashboardParser(argparse.ArgumentParser):
    """The dashboard's options alone; an error in them is said with the whole command line's usage."""

    def error(self, message: str) -> NoReturn:
        build_parser().error(message)


def build_parser(*, commands: bool = True) -> argparse.ArgumentParser:
    """The whole command line, or (`commands=False`) the dashboard's alone: the dashboard, the common case,
    then does not load every other command's module before its first frame."""
    parser = (argparse.ArgumentParser if commands else _DashboardParser)(
        prog="spectop",
        description="Watch and tune speculative decoding on vLLM, SGLang, llama.cpp and "
        "OpenAI-compatible servers. Without a command, opens the live dashboard.",
    )
    parser.add_argument("--version", action="version", version=f"spectop {installed_version()}")
    parser.add_argument(
        "--completion",
        action=_CompletionAction,
        choices=("bash", "zsh", "fish"),
        metavar="SHELL",
        help="print a completion script for bash, zsh or fish and exit "
        '(e.g. eval "$(spectop --completion bash)")',
    )
    add_debug_log_argument(parser)
    monitor.add_monitor_arguments(parser)
    parser.set_defaults(func=monitor.run, command=None)
    if not commands:
        return parser
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        # Every command ships with spectop: one that fails to import is a bug, never a missing command.
        importlib.import_module(module_name).register(subparsers)
    for command in subparsers.choices.values():  # before or after the command: `spectop demo --debug-log F`
        add_debug_log_argument(command, default=argparse.SUPPRESS)
    complete_files(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Every byte a command prints goes through the sanitizer (also argparse's errors, which echo arguments).
    with sanitized_stdio():
        return _main(argv)


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub)command parser the arguments chose: `spectop config set` -> its own parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                return _chosen_parser(action.choices[name], args)
    return parser


def _reject_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> None:
    """Unknown arguments are reported by the command they were given to, with its usage and the option
    they are closest to: `spectop snapshot --windw 3` -> `... (did you mean --window?)`."""
    chosen = _chosen_parser(parser, args)
    options = [option for action in chosen._actions for option in action.option_strings]
    words = []
    for word in unknown:
        close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1) if word.startswith("-") else []
        words.append(f"{word} (did you mean {close[0]}?)" if close else word)
    chosen.error(f"unrecognized arguments: {' '.join(words)}")


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Only words that name a command or ask for help (which lists the commands) load every command.
    named = any(
        word in COMMANDS or word == "-h" or ("--help".startswith(word) and len(word) > 2) for word in argv
    )
    parser = build_parser(commands=named)
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command is None:  # a word the dashboard does not take: said by the whole parser
        parser = build_parser()
        args, unknown = parser.parse_known_args(argv)
    if unknown:
        _reject_unknown(parser, args, unknown)
    try:
        start_debug_log(args.debug_log)
    except OSError as error:
        print(f"spectop: cannot write the debug log: {error}", file=sys.stderr)
        return 2
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
    except Exception:
        log.exception("spectop %s failed", args.command or "dashboard")
        raise
    finally:
        stop_debug_log()


if __name__ == "__main__":
    raise SystemExit(main())
