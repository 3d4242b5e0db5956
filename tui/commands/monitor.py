"""`spectop` with no command: the live dashboard."""

from __future__ import annotations

import argparse
import sys

from tui.commands.replay import add_record_max_mb_argument
from tui.terminal import require_terminal


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
    add_record_max_mb_argument(parser)
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
    require_terminal("the dashboard")
    from tui.app import SpectopApp
    from tui.sources import LiveSource

    source = LiveSource(settings, record_path=args.record, record_max_mb=args.record_max_mb)
    app = SpectopApp(settings, source=source)
    app.run()
    return app.return_code or 0
