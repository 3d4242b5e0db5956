"""`spectop tune`: sweep a speculative-decoding knob (restart, measure each load), recommend, apply."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from tui.advice.calibrate import CALIBRATION_MAX_TOKENS, CALIBRATION_REQUESTS, fit_and_keep, plan_calibration
from tui.bench.prompts import parse_prompt_tokens
from tui.cli_options import API_KEY_ENV, MODEL, Option, add_options, option, option_values, seconds
from tui.commands import EXIT_BAD_ARGUMENTS, EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, say
from tui.configs.errors import ConfigError
from tui.safe_output import progress_line as redraw
from tui.sanitize import safe_line, safe_text
from tui.tune.plan import TunePlanError, parse_int_list
from tui.tune.result import export, render_text, save_tune
from tui.tune.runner import TuneOptions, TuneRun, preflight, progress_line
from tui.validators import normalize_http_url

# The sweep's options; those named as TuneOptions fields go to it as they are.
TUNE_OPTIONS: list[Option] = [
    option("--endpoint", "the server's base URL", required=True, metavar="URL"),
    option(
        "--restart-command",
        "restarts the server (split like a shell, run without one)",
        required=True,
        metavar="CMD",
    ),
    option(
        "--key",
        "dotted key to sweep (default speculative.num_speculative_tokens; SGLang speculative_num_steps)",
        metavar="KEY",
    ),
    option("--values", "default 0,1,2,3,4", metavar="LIST"),
    option(
        "--grid",
        "SGLang only, instead of --key/--values: steps=0,1,2,3 topk=1,4 draft=2,4,8 (put CONFIG first)",
        nargs="+",
        metavar="AXIS=LIST",
    ),
    option("--concurrency", "default 1,8,32", metavar="LIST"),
    option("--requests", "per burst (default 32)", type=int, metavar="N"),
    option(
        "--rounds",
        "passes over every value, a restart each; the baseline is measured again after each (default 1)",
        type=int,
        default=1,
        metavar="R",
    ),
    option(
        "--until-separated",
        "add rounds until every load's best value is separated from the runner-up (Bonferroni-split "
        "intervals over --max-rounds looks), or --max-rounds / --budget end it",
        action="store_true",
    ),
    option("--max-rounds", "with --until-separated: at most R rounds (6)", type=int, default=6, metavar="R"),
    seconds("--budget", "with --until-separated: no round that would end after S seconds of sweeping"),
    option("--warmup", "warm-up requests per burst (default 1)", type=int, default=1, metavar="W"),
    option(
        "--prompts",
        "built-in prompt set or a JSONL file (default mixed)",
        default="mixed",
        metavar="SET|FILE",
    ),
    option(
        "--prompt-tokens",
        "a context axis, e.g. 256,4096,16384: every value and load at each prompt length (the set's prompts "
        "of about that length, else padded to it); the best value per (load, context) and the context where "
        "speculation stops paying (--apply writes the first length's answer: no engine takes one by context)",
        metavar="LIST",
    ),
    option("--max-tokens", "default 128 (32 with --calibrate)", type=int, metavar="M"),
    option("--seed", "sampling seed (default 0)", type=int, default=0, metavar="S"),
    MODEL,
    API_KEY_ENV,
    option("--metrics-url", "default: URL/metrics", metavar="URL"),
    option("--health-url", "default: URL/health", metavar="URL"),
    option("--log-file", "the server's log: why a value failed to start", metavar="FILE"),
    seconds("--health-timeout", "wait for /health after a restart (60)", default=60.0),
    option("--apply", "write the best value instead of restoring", action="store_true"),
    option(
        "--apply-at",
        "the concurrency whose best value --apply writes (default: first)",
        type=int,
        metavar="C",
    ),
    option("--no-history", "keep neither the bursts nor the tune", action="store_true"),
    option(
        "--calibrate",
        "a short sweep for the live advisor's step-cost model: k around the file's own, at the loads "
        "seen live (unless --values / --concurrency), 16 requests of 32 tokens per burst (unless "
        "--requests / --max-tokens), its time said up front; the fit is kept in spectop's data folder "
        "(stepcost.json)",
        action="store_true",
    ),
    option("--json", "the whole result", metavar="FILE"),
    option("--csv", "one row per value and concurrency", metavar="FILE"),
    option("--markdown", "the tables and the verdict", metavar="FILE"),
]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="sweep num_speculative_tokens (or any numeric key): restart, measure, recommend, apply",
        description="For each value: set it in CONFIG (only that line changes), save atomically, run the "
        "restart command (no shell), wait for /health and /metrics, then fire a burst at each concurrency. "
        "Prints decode tokens/s and the speedup over the baseline (value 0 if swept, else the file's "
        "value; 0 is speculation off for the vLLM and SGLang keys, not for a plain key such as llama.cpp's "
        "draft.max: with -md it still drafts) with a 95% interval, acceptance per value, the "
        "recommendation per concurrency (the cheapest value within noise of the fastest), the schedule and "
        "the break-even concurrency. Before anything changes, the restart command must exist and the server "
        "answer /health. The file is restored byte for byte at the end (also on Ctrl-C, SIGTERM or an "
        "error) and the server restarted on it (after a signal without waiting for /health; a second one "
        "stops the restart command); --apply writes the recommendation instead "
        "when it is significantly faster than the file's own value. "
        "An SGLang file can be swept over a grid instead: --grid steps=1,2,3 topk=1,4 draft=2,4,8 tries "
        "every (steps, topk, draft tokens) SGLang runs as written (each point edits only those three lines) "
        "and lists the others as skipped with the reason: with topk 1 SGLang forces draft = steps + 1, and a "
        "tree offers at most topk + (steps-1)*topk^2 draft tokens. steps=0 adds speculation off as the "
        "baseline (else the file's own point); a left-out topk is the file's, a left-out draft is steps + 1 "
        "for topk 1 and the file's otherwise. "
        "Exit 0 when done, 1 when the server does not answer, the restart command cannot run, the final "
        "restart failed or nothing could be measured, 2 on bad arguments or an unreadable file, 130 when "
        "cancelled (restored).",
    )
    parser.add_argument("config", metavar="CONFIG", help="the server's config file (edited in place)")
    add_options(parser, TUNE_OPTIONS)
    parser.set_defaults(func=run)


def _say(message: str) -> None:
    say("tune", safe_line(message))


def _progress_printer() -> Any:
    tty = sys.stderr.isatty()
    last: dict[str, Any] = {"key": None}

    def show(progress: Any) -> None:
        line = progress_line(progress)
        if tty:
            redraw(line)
            return
        key = (progress.phase, progress.value, progress.concurrency)
        if key != last["key"]:  # not a terminal: one line per step, no carriage returns
            last["key"] = key
            print(line, file=sys.stderr, flush=True)

    return show


def _options(args: argparse.Namespace) -> Any:
    command = shlex.split(args.restart_command)
    if not command:
        raise TunePlanError("--restart-command: empty")
    if args.grid and (args.key or args.values):
        raise TunePlanError("--grid sweeps steps × topk × draft tokens: leave out --key and --values")
    requests = 32 if args.requests is None else args.requests
    max_tokens = 128 if args.max_tokens is None else args.max_tokens
    for name, number in (
        ("--requests", requests),
        ("--rounds", args.rounds),
        ("--max-rounds", args.max_rounds),
        ("--max-tokens", max_tokens),
    ):
        if number < 1:
            raise TunePlanError(f"{name}: must be at least 1, got {number}")
    try:
        endpoint = normalize_http_url(args.endpoint)
        metrics = normalize_http_url(args.metrics_url) if args.metrics_url else None
        health = normalize_http_url(args.health_url) if args.health_url else None
        lengths = parse_prompt_tokens(args.prompt_tokens) if args.prompt_tokens is not None else None
    except ValueError as error:  # OptionError is one
        raise TunePlanError(str(error)) from None
    passed = {field.name for field in fields(TuneOptions)}
    given = {field: value for field, value in option_values(args, TUNE_OPTIONS).items() if field in passed}
    return TuneOptions(
        **given
        | {
            "config_file": Path(args.config),
            "endpoint": endpoint,
            "restart_command": command,
            "grid": tuple(args.grid) if args.grid else None,
            "values": parse_int_list(args.values or "0,1,2,3,4", "--values", minimum=0),
            "concurrencies": parse_int_list(args.concurrency or "1,8,32", "--concurrency", minimum=1),
            "requests": requests,
            "max_tokens": max_tokens,
            "warmup": max(0, args.warmup),
            "metrics_url": metrics,
            "health_url": health,
            "log_file": Path(args.log_file) if args.log_file else None,
            "keep_history": not args.no_history,
            "prompt_tokens": lengths,
        }
    )


def _calibration(args: argparse.Namespace, options: Any) -> tuple[Any, Any]:
    if args.requests is None:
        options = replace(options, requests=CALIBRATION_REQUESTS)
    if args.max_tokens is None:  # the step time is what is measured: short requests measure it as well
        options = replace(options, max_tokens=CALIBRATION_MAX_TOKENS)
    given = {"values_given": args.values is not None, "loads_given": args.concurrency is not None}
    planned = plan_calibration(options, **given)
    options, calibration, line = asyncio.run(planned)
    _say(line)
    return options, calibration


async def _run(tune: Any) -> Any:
    """The sweep; the first SIGINT / SIGTERM ends every wait for the server at once (the file restored,
    the restart command run, /health not waited for), a second one kills a restart command under way."""
    loop = asyncio.get_running_loop()
    cancel, kill = asyncio.Event(), asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)

    def stop(number: signal.Signals) -> None:
        name = signal.Signals(number).name
        print(file=sys.stderr)
        if not cancel.is_set():
            cancel.set()
            _say(
                f"{name}: stopping: restoring the config file and running the restart command, without "
                "waiting for /health (again: stop a restart command that keeps you waiting)"
            )
        else:
            kill.set()
            _say(
                f"{name} again: stopping the restart command under way, if any; "
                "the file is restored all the same"
            )

    for number in signals:
        loop.add_signal_handler(number, stop, number)
    try:
        return await tune.run(cancel, wait_when_cancelled=False, kill=kill)
    finally:
        for number in signals:
            loop.remove_signal_handler(number)


def run(args: argparse.Namespace) -> int:
    calibration = None
    try:
        options = _options(args)
        tune = TuneRun(options, on_progress=_progress_printer())
        if not args.calibrate:  # the file parses and has the key, before anything is asked of the server
            asyncio.run(tune.prepare())
        problem = asyncio.run(preflight(options))
        if problem is not None:
            _say(problem)
            return EXIT_FAILED
        if args.calibrate:  # the step-cost model of the live advisor: tui/advice/calibrate.py
            options, calibration = _calibration(args, options)
            tune = TuneRun(options, on_progress=_progress_printer())
            asyncio.run(tune.prepare())
    except (TunePlanError, ConfigError) as error:
        _say(str(error))
        return EXIT_BAD_ARGUMENTS
    result = asyncio.run(_run(tune))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(render_text(result))
    if result.applied is not None:
        name = result.name(result.applied.value)
        print(f"\napplied {name} (best at concurrency {result.applied.concurrency}): {result.apply_note}")
        print(safe_text(result.applied.diff), end="")  # the file's text: untrusted like any other
    kept = None
    if not args.no_history:
        try:
            kept = save_tune(result)
            _say(f"kept in the burst history: {kept}")
        except OSError as error:
            _say(f"could not keep the tune in the history: {error}")
    if calibration is not None:
        _say(fit_and_keep(result, calibration, None if kept is None else str(kept))[1])
    for kind, destination in (("json", args.json), ("csv", args.csv), ("markdown", args.markdown)):
        if destination:
            try:
                _say(f"{kind} written to {export(result, kind, Path(destination))}")
            except OSError as error:
                _say(f"cannot write {destination}: {error}")
    if result.final_restart_ok is False:
        command = shlex.join(options.restart_command)
        print(
            f"\n!!! spectop tune: the final restart failed (see above): the server may be down.\n"
            f"!!! {options.config_file} is {'the applied value' if result.applied else 'restored'}; "
            f"run by hand:\n!!!   {command}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if result.cancelled:
        if not result.final_restart_waited:
            _say(
                f"cancelled: {options.config_file} restored byte for byte and the restart command run; "
                f"spectop did not wait for /health (see: spectop snapshot {options.endpoint})"
            )
        else:
            _say(f"cancelled before any restart: {options.config_file} is as it was")
        return EXIT_CANCELLED
    measured = any(
        cell.decode_tokens_per_s is not None for outcome in result.outcomes for cell in outcome.cells
    )
    return EXIT_OK if measured else EXIT_FAILED
