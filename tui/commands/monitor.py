"""`spectop` with no command: the live dashboard."""

from __future__ import annotations

import argparse
import sys


def add_monitor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="spectop.toml settings file")
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        action="append",
        default=[],
        help="endpoint base URL or metrics URL (repeatable); works without a settings file",
    )
    parser.add_argument("--record", metavar="FILE", help="append every scrape and log event as JSON lines")
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
    if settings.prometheus is not None:
        from tui.fleet.flags import FLEET_DASHBOARD_PENDING  # hook: open the fleet dashboard here

        print(f"spectop: {FLEET_DASHBOARD_PENDING}", file=sys.stderr)
        return 2
    from tui.app import SpectopApp

    app = SpectopApp(settings=settings, record_path=args.record)
    app.run()
    return app.return_code or 0
