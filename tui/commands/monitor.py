"""`spectop` with no command: the live dashboard."""

from __future__ import annotations

import argparse
import sys

from tui.cli_options import completes_files
from tui.commands.replay import add_record_arguments
from tui.terminal import require_terminal


def add_monitor_arguments(parser: argparse.ArgumentParser) -> None:
    completes_files(parser.add_argument("--config", metavar="FILE", help="spectop.toml settings file"))
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        action="append",
        default=[],
        help="endpoint base URL or metrics URL (repeatable); works without a settings file",
    )
    add_record_arguments(parser)
    from tui.fleet.flags import add_fleet_arguments

    add_fleet_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from tui.settings import SettingsError, load_settings

    try:
        settings = load_settings(config_path=args.config, endpoint_urls=args.endpoint)
        from tui.fleet.options import apply_fleet_flags

        apply_fleet_flags(settings, args)  # --prometheus / --match / --group-by → settings.prometheus
    except SettingsError as error:
        print(f"spectop: {error}", file=sys.stderr)
        return 2
    fleet = settings.prometheus is not None  # fleet mode: every instance Prometheus scrapes
    if fleet and (args.endpoint or args.record):
        print(
            "spectop: --prometheus reads the fleet from Prometheus: no --endpoint, no --record",
            file=sys.stderr,
        )
        return 2
    require_terminal("the dashboard")
    from tui.sources import LiveSource, Source
    from tui.ui.app import SpectopApp
    from tui.widgets.worker_errors import print_recovery_notes

    source: Source
    if fleet:
        from tui.sources.fleet import FleetSource

        settings.endpoints = []  # the fleet is what Prometheus knows, not the file's endpoints
        from tui.auth import ApiKeyError

        try:
            source = FleetSource(settings)
        except ApiKeyError as error:
            print(f"spectop: {error}", file=sys.stderr)
            return 2
    else:
        source = LiveSource(settings, record_path=args.record, record_max_mb=args.record_max_mb)
    app = SpectopApp(settings, source=source)
    from tui.ui.terminal_guard import run_app

    run_app(app)
    print_recovery_notes(app)  # after Textual's traceback, if it failed
    for problem in getattr(source, "close_errors", ()):  # the recording's last batch, once the screen is gone
        print(f"spectop: {problem}", file=sys.stderr)
    return app.return_code or 0
