"""`spectop` with no command: the live dashboard."""

from __future__ import annotations

import argparse

from tui.auth import ApiKeyError
from tui.cli_options import add_fleet_arguments
from tui.commands import fail, require_terminal, run_until_quit, say
from tui.commands.replay import add_record_arguments
from tui.settings import SettingsError, apply_fleet_flags, load_settings
from tui.sources import LiveSource, Source
from tui.sources.fleet import FleetSource
from tui.ui.app import SpectopApp


def add_monitor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="spectop.toml settings file")
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        action="append",
        default=[],
        help="endpoint base URL or metrics URL (repeatable); works without a settings file",
    )
    add_record_arguments(parser)
    add_fleet_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(config_path=args.config, endpoint_urls=args.endpoint)
        apply_fleet_flags(settings, args)  # --prometheus / --match / --group-by → settings.prometheus
    except SettingsError as error:
        return fail("", str(error))
    fleet = settings.prometheus is not None  # fleet mode: every instance Prometheus scrapes
    if fleet and (args.endpoint or args.record):
        return fail("", "--prometheus reads the fleet from Prometheus: no --endpoint, no --record")
    require_terminal("the dashboard")
    source: Source
    if fleet:
        settings.endpoints = []  # the fleet is what Prometheus knows, not the file's endpoints
        try:
            source = FleetSource(settings)
        except ApiKeyError as error:
            return fail("", str(error))
    else:
        source = LiveSource(settings, record_path=args.record, record_max_mb=args.record_max_mb)
    code = run_until_quit(SpectopApp(settings, source=source))
    for problem in getattr(source, "close_errors", ()):  # the recording's last batch, once the screen is gone
        say("", problem)
    return code
