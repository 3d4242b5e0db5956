"""`spectop bench`: a headless A/B (or one-arm) request burst with a summary table."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from tui.bench.burst_store import bursts_dir, history_lines, list_bursts
from tui.bench.context import context_table, length_check, sized_for_server
from tui.bench.engine import ArmUnreachable, BurstConfigError
from tui.bench.prompts import OptionError, PromptSetError, parse_prompt_tokens
from tui.bench.report.text import render_text
from tui.bench.session import BurstRequest, BurstRequestError, BurstSession, EndpointArm, PastArm
from tui.cli_options import (
    API_KEY_ENV,
    MODEL,
    Option,
    add_options,
    option,
    option_flags,
    option_values,
    seconds,
)
from tui.commands import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, fail, say
from tui.format import fmt_latency
from tui.gpu.burst import BurstGpuWatch
from tui.gpu.mapping import plan_for_endpoint
from tui.safe_output import progress_line
from tui.sanitize import safe_line
from tui.settings import EndpointSettings
from tui.tune.result import tune_history_lines
from tui.validators import friendly_message

# The BurstRequest's fields, each from its flag, in the order of --help; the load pair excludes itself.
ARM_OPTIONS: list[Option] = [
    option("--a", "arm A base URL (default: base_url of --client-settings)", metavar="URL"),
    option("--b", "arm B base URL; without it, a plain one-arm benchmark", metavar="URL"),
    option("--requests", "measured requests per arm (default 32)", type=int, default=32, metavar="N"),
]
LOAD_OPTIONS: list[Option] = [
    option("--concurrency", "requests in flight per arm (default 1)", type=int, metavar="C"),
    option("--rate", "requests per second per arm (open loop)", type=float, metavar="R"),
]
REQUEST_OPTIONS: list[Option] = [
    option("--arrival", "with --rate", choices=("poisson", "constant"), default="poisson"),
    option("--max-concurrency", "cap with --rate", type=int, default=64, metavar="C"),
    option("--max-tokens", "default: client settings, else 512", type=int, metavar="M"),
    option("--temperature", "default: client settings, else 0 (outputs compared)", type=float, metavar="T"),
    option("--seed", "sampling seed sent to the server", type=int, metavar="S"),
    option(
        "--prompts",
        "built-in set (mixed, code, chat, math, prose; -en / -zh) or a JSONL file (default mixed)",
        default="mixed",
        metavar="SET|FILE",
    ),
    option("--rounds", "rounds; arm order alternates (default 3)", type=int, default=3, metavar="K"),
    option(
        "--until-significant",
        "A/B: rounds of --requests each until B/A's interval excludes 1.0, at most --max-rounds; each "
        "look's interval at the Bonferroni level 1 - 0.05/(max rounds - 1)",
        action="store_true",
    ),
    option("--max-rounds", "with --until-significant (default 10)", type=int, default=10, metavar="R"),
    option("--warmup", "warm-up requests per arm, left out (default 1)", type=int, default=1, metavar="W"),
    option(
        "--api",
        "chat / completions (OpenAI API), or sglang: SGLang's native /generate, whose meta_info "
        "carries per-request acceptance",
        choices=("chat", "completions", "sglang"),
        default="chat",
    ),
    option(
        "--schedule",
        "alternate (default): A's round, then B's, never overlapping; parallel: both at once "
        "(only for arms on separate machines)",
        choices=("alternate", "parallel"),
    ),
    option(
        "--slo", "e.g. ttft=500ms,tpot=40ms,e2e=10s: share of requests meeting all, goodput", metavar="SPEC"
    ),
    option("--percentiles", "extra percentiles, e.g. 50,90,99,99.9", metavar="LIST"),
    option("--a-extra", 'request fields for A only, e.g. {"enable_speculative": false}', metavar="JSON"),
    option("--b-extra", "request fields for B only (A and B may be one URL)", metavar="JSON"),
    option(
        "--prime-cache",
        "send each prompt once to each arm first (left out), so both prefix caches start equal",
        action="store_true",
    ),
    option(
        "--flush-cache",
        "ask each server to drop its prefix cache first (SGLang /flush_cache, vLLM /reset_prefix_cache)",
        action="store_true",
    ),
    MODEL,
    API_KEY_ENV,
    option("--client-settings", "client settings.json", metavar="FILE"),
    seconds("--timeout", "seconds per connect / read"),
]
BURST_OPTIONS = [*ARM_OPTIONS, *LOAD_OPTIONS, *REQUEST_OPTIONS]
EXPORT_OPTIONS: list[Option] = [
    option("--json", "every request's timings and the summary", metavar="FILE"),
    option(
        "--json-detail",
        "with --json: also every chunk's arrival time, size and tokens (about 1 MB per 64 requests)",
        action="store_true",
    ),
    option("--csv", "one row per request", metavar="FILE"),
    option("--markdown", "the summary table", metavar="FILE"),
]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="A/B request burst: is B faster than A for these prompts, and at what TTFT cost",
        description="Fire streamed requests at one or two OpenAI-compatible servers and compare decode "
        "tokens/s, TTFT, TPOT and throughput (with a bootstrap 95% CI). URL is the server's base URL "
        "(with or without /v1). Exit 0 when the burst ran, 1 when any request failed or an arm is not "
        "reachable (checked first; nothing is kept), 2 on bad arguments.",
    )
    add_options(parser, ARM_OPTIONS)
    add_options(parser.add_mutually_exclusive_group(), LOAD_OPTIONS)
    add_options(parser, REQUEST_OPTIONS)
    parser.add_argument("--no-metrics", action="store_true", help="do not scrape /metrics")
    parser.add_argument("--no-history", action="store_true", help="do not keep this burst in the history")
    gpu = parser.add_argument_group("GPU energy (energy per output token, tokens per joule, throttling)")
    gpu.add_argument("--gpu-metrics-url", metavar="URL", help="dcgm-exporter page of both arms' GPUs")
    gpu.add_argument("--a-gpu-metrics-url", metavar="URL", help="dcgm-exporter page of arm A's GPUs")
    gpu.add_argument("--b-gpu-metrics-url", metavar="URL", help="dcgm-exporter page of arm B's GPUs")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="compare two kept bursts (files from --history) instead of running one",
    )
    parser.add_argument("--history", action="store_true", help="list the kept bursts, newest first")
    parser.add_argument(
        "--prompt-tokens",
        metavar="LIST",
        help="context lengths, e.g. 256,4096,16384 (or 4k,16k): one burst per length, the prompts drawn "
        "from the set by length or padded to about that many tokens; each checked against the prompt "
        "tokens the server counted",
    )
    add_options(parser, EXPORT_OPTIONS)
    parser.set_defaults(func=run)


def _fail(message: str) -> int:
    return fail("bench", safe_line(message))


def _progress_printer() -> Any:
    if not sys.stderr.isatty():
        return None

    def show(progress: Any) -> None:
        arms = "  ".join(f"{arm.label.upper()} {arm.done}/{arm.total}" for arm in progress.arms)
        progress_line(f"{progress.phase:8} {arms}  {fmt_latency(progress.elapsed_s):>7}")

    return show


def _list_history() -> int:
    entries = list_bursts()
    tunes = tune_history_lines()
    if not entries and not tunes:
        print(f"no bursts kept yet in {bursts_dir()}")
        return EXIT_OK
    if entries:
        print("\n".join(history_lines(entries, shutil.get_terminal_size().columns)))
    if tunes:  # a tune is one entry, its bursts inside it
        print(("\n" if entries else "") + "\n".join(tunes))
    return EXIT_OK


def _request(args: argparse.Namespace) -> Any:
    """The BurstRequest of these flags (BurstRequestError when one cannot be used)."""
    values = option_values(args, BURST_OPTIONS)
    max_concurrency = values.pop("max_concurrency")
    concurrency = 1 if args.concurrency is None else args.concurrency
    values |= {
        "a": EndpointArm(name="A", base_url=args.a) if args.a is not None else None,
        "b": EndpointArm(name="B", base_url=args.b) if args.b is not None else None,
        "concurrency": max_concurrency if args.rate is not None else concurrency,
        "scrape_metrics": not args.no_metrics,
    }
    return BurstRequest.parse(values)


def _write_exports(outcome: Any, args: argparse.Namespace) -> int:
    for kind, destination in (("json", args.json), ("csv", args.csv), ("markdown", args.markdown)):
        if destination:
            try:
                written = outcome.export(kind, Path(destination), detail=kind == "json" and args.json_detail)
                print(f"{kind} written to {written}", file=sys.stderr)
            except OSError as error:
                say("bench", f"cannot write {destination}: {error}")
                return EXIT_FAILED
    return EXIT_OK


def _gpu_arms(args: argparse.Namespace, request: Any) -> list[Any]:
    """The live arms whose GPUs to watch: those with an exporter URL, and local ones when NVML is there."""
    nvml = importlib.util.find_spec("pynvml") is not None
    arms = []
    for side, arm in (("a", request.a), ("b", request.b)):
        if not isinstance(arm, EndpointArm):
            continue
        url = getattr(args, f"{side}_gpu_metrics_url") or args.gpu_metrics_url
        if not url and not (nvml and plan_for_endpoint(arm.base_url, None, None).kind == "nvml"):
            continue
        try:
            arms.append(EndpointSettings(name=side.upper(), url=arm.base_url, gpu_metrics_url=url))
        except ValidationError as error:
            message = friendly_message(dict(error.errors()[0]))
            raise ValueError(f"--{side}-gpu-metrics-url: {message}") from None
    return arms


async def _run_session(session: Any, args: argparse.Namespace) -> Any:
    arms = _gpu_arms(args, session.request)
    if not arms:
        return await session.run(on_progress=_progress_printer())
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, connect=2.0)) as client:
        watch = BurstGpuWatch(arms, client)
        session.gpu = watch
        try:
            return await session.run(on_progress=_progress_printer())
        finally:
            watch.close()


def run(args: argparse.Namespace) -> int:
    if args.history:
        return _list_history()
    if args.prompt_tokens is not None:
        return _run_lengths(args)
    if args.compare:
        try:
            before, after = (PastArm(path=Path(path)) for path in args.compare)
            outcome = BurstSession.compare(before, after)
        except BurstRequestError as error:
            return _fail(error.described({"a": "BEFORE", "b": "AFTER"}))
        except ValueError as error:
            return _fail(str(error))
        print(render_text(outcome.summary))
        return _write_exports(outcome, args)
    return _burst(args)[0]


def _burst(args: argparse.Namespace) -> tuple[int, Any]:
    """One burst as the flags say: its exit code and outcome (None when it did not run)."""
    flags = option_flags(BURST_OPTIONS)
    if args.rate is not None:
        flags["concurrency"] = "--max-concurrency"
    try:
        request = _request(args)
        for note in request.notes:
            say("bench", note)
        session = BurstSession(request)
        outcome = asyncio.run(_run_session(session, args))
    except BurstRequestError as error:
        return _fail(error.described(flags)), None
    except ArmUnreachable as error:
        say("bench", str(error))
        return EXIT_FAILED, None
    except (BurstConfigError, ValueError) as error:
        return _fail(str(error)), None
    except KeyboardInterrupt:
        print(file=sys.stderr)
        say("bench", "cancelled; every request in flight was closed")
        return EXIT_CANCELLED, None
    if sys.stderr.isatty():
        print(file=sys.stderr)
    for note in outcome.notes:
        say("bench", note)
    print(render_text(outcome.summary))
    if not args.no_history:
        try:
            print(f"kept in the burst history: {session.save()}", file=sys.stderr)
        except OSError as error:
            say("bench", f"could not keep the burst in the history: {error}")
    written = _write_exports(outcome, args)
    if written != EXIT_OK:
        return written, outcome
    return (EXIT_FAILED if outcome.failed else EXIT_OK), outcome


def _run_lengths(args: argparse.Namespace) -> int:
    """`--prompt-tokens 256,4096`: one burst per prompt length (the set at about that many tokens), each
    checked against the prompt tokens the server counted, then one line per length."""
    if args.compare:
        return _fail("--prompt-tokens: runs bursts; --compare only reads kept ones")
    try:
        lengths = parse_prompt_tokens(args.prompt_tokens)
    except OptionError as error:
        return _fail(str(error))
    rows, code = [], EXIT_OK
    for tokens in lengths:
        spec = f"{args.prompts}@{tokens}"
        try:
            sizing = asyncio.run(sized_for_server(spec, args.a)).sizing
        except PromptSetError as error:
            return _fail(f"--prompts: {error}")
        print(f"\n== context {tokens} tokens: {sizing}")
        exports = {
            kind: str(Path(path).with_stem(f"{Path(path).stem}-{tokens}tok"))
            for kind in ("json", "csv", "markdown")
            if (path := getattr(args, kind))
        }
        code, outcome = _burst(argparse.Namespace(**(vars(args) | exports | {"prompts": spec})))
        if outcome is None:
            return code
        arms = outcome.ran.arms if outcome.ran else outcome.result.arms
        print(length_check(tokens, arms))
        rows.append((tokens, arms, outcome.summary))
    print("\n" + "\n".join(context_table(rows)))
    return code
