"""Options declared once, as rows (flag, field, argparse keywords): a command adds them, reads the fields
back, and names a field's flag in an error from the same rows."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

import shtab

Option = tuple[str, str, dict[str, Any]]  # (flag, field, add_argument keywords)


def complete_files(parser: argparse.ArgumentParser) -> None:
    """Completion scripts complete file names for every argument whose metavar names files."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                complete_files(command)
        elif any(word in str(action.metavar) for word in ("FILE", "CONFIG", "BEFORE")):
            action.complete = shtab.FILE  # type: ignore[attr-defined]


def add_options(target: Any, options: Iterable[Option]) -> None:
    for flag, field, keywords in options:
        target.add_argument(flag, dest=field, **keywords)


def option_values(args: argparse.Namespace, options: Iterable[Option], given: bool = False) -> dict[str, Any]:
    """The rows' fields and values (`given`: only those not None)."""
    values = {field: getattr(args, field) for _, field, _ in options}
    return {field: value for field, value in values.items() if value is not None} if given else values


def option_flags(options: Iterable[Option]) -> dict[str, str]:
    return {field: flag for flag, field, _ in options}


def option(flag: str, help: str | None, *, dest: str | None = None, **keywords: Any) -> Option:
    """A row; its field is argparse's dest (the flag's name with `_` for `-`) unless `dest` says another."""
    return (flag, dest or flag.removeprefix("--").replace("-", "_"), {"help": help, **keywords})


def seconds(flag: str, help: str, metavar: str = "S", **keywords: Any) -> Option:
    """A row of a number of seconds; its field is the flag's name with `_s`."""
    return option(flag, help, dest=option(flag, None)[1] + "_s", type=float, metavar=metavar, **keywords)


# Rows bench and tune share.
MODEL = option("--model", "default: the first model from /v1/models", metavar="NAME")
API_KEY_ENV = option("--api-key-env", "environment variable that holds the API key", metavar="NAME")


FLEET_OPTIONS = [
    option(
        "--prometheus", "fleet mode: read this Prometheus server instead of scraping endpoints", metavar="URL"
    ),
    option(
        "--match",
        "with --prometheus: label matchers selecting the instances, e.g. '{job=\"vllm\"}'",
        metavar="SELECTOR",
    ),
    option(
        "--group-by",
        "with --prometheus: label grouping the instances (default job; 'model' = model name)",
        metavar="LABEL",
    ),
]


def add_fleet_arguments(parser: argparse.ArgumentParser, *, group_by: bool = True) -> None:
    add_options(parser, FLEET_OPTIONS if group_by else FLEET_OPTIONS[:2])
