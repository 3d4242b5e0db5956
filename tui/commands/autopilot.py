"""`spectop autopilot`: keep one server, or a fleet through Prometheus, at its best speculative k.

Dry run unless --auto: it says what it would do and why. Each decision is a line here and a record in the
audit trail (--history reads it back with the gain against the starting config).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
from dataclasses import replace
from pathlib import Path

import httpx

from tui.advice.calibrate import sim_step_cost
from tui.advice.live import KeptModels, read_models
from tui.autopilot import audit, audit_file
from tui.autopilot.loop import Autopilot, Eyes
from tui.autopilot.observe import FleetEyes, Seen, ServerEyes
from tui.autopilot.policy import Limits
from tui.autopilot.targets import HEALTH_TIMEOUT_S, Target, from_templates
from tui.cli_options import Option, add_fleet_arguments, add_options, option, option_values, seconds
from tui.commands import EXIT_OK, fail
from tui.fleet.poller import FleetPoller
from tui.sanitize import safe_line
from tui.settings import SettingsError, prometheus_settings

HELP = "keep a server or a fleet at its best speculative k, proving each change (dry run unless --auto)"


# One server's options, a fleet's (beside --prometheus and --match), the limits (Limits' fields) and the rest.
OPTIONS: list[Option] = [
    option("--endpoint", "one server: its base URL", metavar="URL"),
    option("--restart-command", "one server: restarts it (split like a shell)", metavar="CMD"),
    option(
        "--config-template", "a fleet: each instance's config, e.g. /etc/vllm/{port}.toml", metavar="PATH"
    ),
    option(
        "--restart-template",
        "a fleet: e.g. 'systemctl restart vllm@{port}' ({instance} {host} {job})",
        metavar="CMD",
    ),
    seconds(
        "--health-timeout", "wait this long for a changed server's /health after its restart (default 120)"
    ),
    option("--auto", "act: change, test, keep or roll back (never the default)", action="store_true"),
    option("--history", "print the audit trail and what it gained, then exit", action="store_true"),
    option("--audit", f"the audit trail (default {audit_file()})", type=Path, metavar="FILE"),
    option("--rounds", "stop after N intervals (default: at Ctrl-C)", type=int, metavar="N"),
    option("--sim-step-cost", "spectop sim servers: use each sim's own step-cost model", action="store_true"),
]
LIMITS: list[Option] = [
    option("--margin", "a change must pay this fraction (default 0.05)", type=float, metavar="F"),
    seconds("--sustained", "seconds the advice must hold (default 120)"),
    option("--max-changes-per-hour", "default 6", type=int, metavar="N"),
    option("--min-healthy", "replicas kept up beside the one changed (default 1)", type=int, metavar="N"),
    seconds("--quiet", "seconds after a change before its test samples and the next (default 60)"),
    seconds("--interval", "seconds per sample (default 15)"),
    seconds("--test-limit", "seconds a test may run before it is inconclusive (default 900)"),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("autopilot", help=HELP, description=HELP + ".")
    parser.add_argument("config", nargs="?", type=Path, metavar="CONFIG", help="one server: its config file")
    add_options(parser, OPTIONS)
    add_fleet_arguments(parser, group_by=False)
    add_options(parser.add_argument_group("limits"), LIMITS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = args.audit or audit_file()
    if args.history:
        records, bad = audit.read(path)
        for record in records:
            print(record.line())
        if bad:
            print(f"({bad} lines of {path} did not read as records)")
        print(audit.summary(records))
        return EXIT_OK
    fleet = args.prometheus is not None
    if fleet and not (args.config_template and args.restart_template):
        return fail("autopilot", "--prometheus needs --config-template and --restart-template")
    if not fleet and not (args.config and args.endpoint and args.restart_command):
        return fail("autopilot", "give CONFIG --endpoint URL --restart-command CMD, or --prometheus URL ...")
    if args.health_timeout_s is not None and args.health_timeout_s <= 0:
        return fail("autopilot", "--health-timeout must be > 0")
    try:
        return asyncio.run(_run(args, path))
    except (ValueError, SettingsError) as error:
        return fail("autopilot", str(error))


async def _run(args: argparse.Namespace, path: Path) -> int:
    limits = Limits(**option_values(args, LIMITS, given=True))
    kept = read_models()
    health_timeout_s = args.health_timeout_s or HEALTH_TIMEOUT_S

    def with_sim_model(kept: KeptModels, target: Target) -> KeptModels:
        model = sim_step_cost(target.config, target.url) if args.sim_step_cost else None
        if model is None:
            return kept
        return replace(kept, models=kept.models.model_copy(update={"models": [*kept.models.models, model]}))

    async with httpx.AsyncClient(follow_redirects=True) as client:
        if args.prometheus:
            settings = prometheus_settings(None, args.prometheus, args.match)
            assert settings is not None
            poller = FleetPoller(settings, max(limits.interval_s, 2.0))
            eyes: Eyes = FleetEyes(poller)
            targets: dict[str, Target] = {}

            def make_target(name: str, seen: Seen) -> Target:
                templates = args.config_template, args.restart_template
                target = from_templates(name, seen.job, *templates, health_timeout_s=health_timeout_s)
                pilot.kept = with_sim_model(pilot.kept, target)
                return target

            maker = make_target
        else:
            url = args.endpoint.rstrip("/")
            target = Target(url, args.config, shlex.split(args.restart_command), url, health_timeout_s)
            eyes, targets, maker = ServerEyes(url, url + "/metrics", client), {url: target}, None
            kept = with_sim_model(kept, target)
        pilot = Autopilot(
            targets, eyes, kept, limits, auto=args.auto, audit_path=path, client=client, make_target=maker,
            say=lambda line: print(safe_line(line), flush=True),
        )  # fmt: skip
        mode = "acting (--auto)" if args.auto else "dry run (--auto to act)"
        print(f"spectop autopilot: {mode}; audit trail {path}", flush=True)
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def interrupt() -> None:  # once: a second Ctrl-C must not stop the configs being put back
            task.cancel()
            loop.add_signal_handler(signal.SIGINT, print, "spectop autopilot: putting the configs back first")

        loop.add_signal_handler(signal.SIGINT, interrupt)
        try:
            await pilot.run(args.rounds)
        except asyncio.CancelledError:
            print("spectop autopilot: interrupted", flush=True)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            if args.prometheus:
                await poller.aclose()
    print(audit.summary(audit.read(path)[0]), flush=True)
    return EXIT_OK
