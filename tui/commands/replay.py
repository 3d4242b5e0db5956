"""`spectop replay FILE`: play a `--record` recording back in the dashboard; and `--record-max-mb`."""

from __future__ import annotations

import argparse
from pathlib import Path

from tui.commands import fail, require_terminal, run_until_quit
from tui.settings import Settings, SettingsError, load_settings
from tui.sources import ReplaySource
from tui.telemetry.recording import DEFAULT_MAX_MB, RecordingError, check_recording
from tui.ui.app import SpectopApp


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    """`--record FILE` and `--record-max-mb MB` (the dashboard and `spectop demo`)."""
    parser.add_argument("--record", metavar="FILE", help="append every scrape and log event as JSON lines")
    parser.add_argument(
        "--record-max-mb",
        type=float,
        default=DEFAULT_MAX_MB,
        metavar="MB",
        help=f"rotate the recording to FILE.1 past this size (default {DEFAULT_MAX_MB}; 0: no cap)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="play a recording (from --record) back in the dashboard",
        description="Play a JSONL recording made with `spectop --record FILE` back in the dashboard. "
        "Keys: p pause, + / - speed, q quit.",
    )
    parser.add_argument("file", metavar="FILE", help="the recording (JSON lines)")
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        metavar="X",
        help="playback speed factor (default 1; 0 plays everything at once)",
    )
    parser.add_argument("--config", metavar="FILE", help="spectop.toml for alert thresholds (optional)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        return fail("replay", f"{path}: no such file")
    if path.is_dir() or not path.is_file():  # a folder, /dev/null, a pipe: there is no recording to read
        what = "a folder" if path.is_dir() else "not a regular file"
        return fail("replay", f"{path} is not a spectop recording ({what})")
    if args.speed < 0:
        return fail("replay", f"--speed must be 0 or more, got {args.speed}")
    try:
        check_recording(path)  # before any screen: a config file or a log given by mistake is said so
    except RecordingError as error:
        return fail("replay", f"{path} is not a spectop recording ({error})")
    except OSError as error:
        return fail("replay", f"cannot read {path}: {error.strerror or error}")
    try:
        settings = load_settings(config_path=args.config) if args.config else Settings()
    except SettingsError as error:
        return fail("replay", str(error))
    settings.endpoints = []  # the recording names its endpoints
    require_terminal("replay")
    return run_until_quit(SpectopApp(settings, source=ReplaySource(path, args.speed)))
