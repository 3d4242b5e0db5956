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

from tui.commands import fail
from tui.paths import user_data_dir
from tui.sanitize import safe_line

EXIT_OK, EXIT_FAILED, EXIT_BAD_ARGUMENTS = 0, 1, 2
HELP = "keep a server or a fleet at its best speculative k, proving each change (dry run unless --auto)"


def audit_file() -> Path:
    return user_data_dir() / "autopilot.jsonl"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("autopilot", help=HELP, description=HELP + ".")
    parser.add_argument("config", nargs="?", type=Path, metavar="CONFIG", help="one server: its config file")
    parser.add_argument("--endpoint", metavar="URL", help="one server: its base URL")
    parser.add_argument(
        "--restart-command", metavar="CMD", help="one server: restarts it (split like a shell)"
    )
    parser.add_argument("--prometheus", metavar="URL", help="a fleet: the Prometheus that scrapes it")
    parser.add_argument("--match", metavar="SELECTOR", help="a fleet: label matchers, e.g. '{job=\"vllm\"}'")
    parser.add_argument(
        "--config-template",
        metavar="PATH",
        help="a fleet: each instance's config, e.g. /etc/vllm/{port}.toml",
    )
    parser.add_argument(
        "--restart-template",
        metavar="CMD",
        help="a fleet: e.g. 'systemctl restart vllm@{port}' ({instance} {host} {job})",
    )
    parser.add_argument(
        "--auto", action="store_true", help="act: change, test, keep or roll back (never the default)"
    )
    parser.add_argument(
        "--history", action="store_true", help="print the audit trail and what it gained, then exit"
    )
    parser.add_argument(
        "--audit", type=Path, metavar="FILE", help=f"the audit trail (default {audit_file()})"
    )
    numbers = parser.add_argument_group("limits")
    for flag, field, kind, words in (
        ("--margin", "margin", float, "a change must pay this fraction (default 0.05)"),
        ("--sustained", "sustained_s", float, "seconds the advice must hold (default 120)"),
        ("--max-changes-per-hour", "max_changes_per_hour", int, "default 6"),
        ("--min-healthy", "min_healthy", int, "replicas kept up beside the one changed (default 1)"),
        (
            "--quiet",
            "quiet_s",
            float,
            "seconds after a change before its test samples and the next (default 60)",
        ),
        ("--interval", "interval_s", float, "seconds per sample (default 15)"),
        (
            "--test-limit",
            "test_limit_s",
            float,
            "seconds a test may run before it is inconclusive (default 900)",
        ),
    ):
        numbers.add_argument(flag, dest=field, type=kind, metavar="N", help=words)
    parser.add_argument("--rounds", type=int, metavar="N", help="stop after N intervals (default: at Ctrl-C)")
    parser.add_argument(
        "--sim-step-cost", action="store_true", help="spectop sim servers: use each sim's own step-cost model"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui.autopilot import audit

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
    try:
        return asyncio.run(_run(args, path))
    except ValueError as error:
        return fail("autopilot", str(error))


async def _run(args: argparse.Namespace, path: Path) -> int:
    import httpx

    from tui.advice.calibrate import sim_step_cost
    from tui.advice.live import KeptModels, read_models
    from tui.autopilot.loop import Autopilot, Eyes
    from tui.autopilot.observe import FleetEyes, Seen, ServerEyes
    from tui.autopilot.policy import Limits
    from tui.autopilot.targets import Target, from_templates
    from tui.fleet.options import prometheus_settings
    from tui.fleet.poller import FleetPoller

    given = {
        name: getattr(args, name)
        for name in Limits.__dataclass_fields__
        if getattr(args, name, None) is not None
    }
    limits = Limits(**given)
    kept = read_models()

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
                target = from_templates(name, seen.job, args.config_template, args.restart_template)
                pilot.kept = with_sim_model(pilot.kept, target)
                return target

            maker = make_target
        else:
            url = args.endpoint.rstrip("/")
            target = Target(url, args.config, shlex.split(args.restart_command), url)
            eyes, targets, maker = ServerEyes(url, url, client), {url: target}, None
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
    from tui.autopilot import audit

    print(audit.summary(audit.read(path)[0]), flush=True)
    return EXIT_OK
