"""`spectop replay FILE`: play a `--record` recording back in the dashboard."""

from __future__ import annotations

import argparse
from pathlib import Path

from tui.terminal import require_terminal


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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
    if not path.is_file():
        print(f"spectop replay: {path}: no such file")
        return 2
    if args.speed < 0:
        print(f"spectop replay: --speed must be 0 or more, got {args.speed}")
        return 2
    from tui.settings import Settings, SettingsError, load_settings

    try:
        settings = load_settings(config_path=args.config) if args.config else Settings()
    except SettingsError as error:
        print(f"spectop replay: {error}")
        return 2
    settings.endpoints = []  # the recording names its endpoints
    require_terminal("replay")
    from tui.app import SpectopApp

    app = SpectopApp(settings=settings, replay_path=path, replay_speed=args.speed)
    app.run()
    return app.return_code or 0
