"""`spectop bench`: a headless A/B (or one-arm) request burst with a summary table."""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_OK, EXIT_REQUEST_FAILED, EXIT_BAD_ARGUMENTS, EXIT_CANCELLED = 0, 1, 2, 130


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="A/B request burst: is B faster than A for these prompts, and at what TTFT cost",
        description="Fire streamed requests at one or two OpenAI-compatible servers and compare decode "
        "tokens/s, TTFT, TPOT and throughput (with a bootstrap 95% CI). URL is the server's base URL "
        "(with or without /v1). Exit 0 when the burst ran, 1 when any request failed or an arm is not "
        "reachable (checked first; nothing is kept), 2 on bad arguments.",
    )
    parser.add_argument("--a", metavar="URL", help="arm A base URL (default: base_url of --client-settings)")
    parser.add_argument("--b", metavar="URL", help="arm B base URL; without it, a plain one-arm benchmark")
    parser.add_argument(
        "--requests", type=int, default=32, metavar="N", help="measured requests per arm (default 32)"
    )
    load = parser.add_mutually_exclusive_group()
    load.add_argument("--concurrency", type=int, metavar="C", help="requests in flight per arm (default 1)")
    load.add_argument("--rate", type=float, metavar="R", help="requests per second per arm (open loop)")
    parser.add_argument("--arrival", choices=("poisson", "constant"), default="poisson", help="with --rate")
    parser.add_argument("--max-concurrency", type=int, default=64, metavar="C", help="cap with --rate")
    parser.add_argument("--max-tokens", type=int, metavar="M", help="default: client settings, else 512")
    parser.add_argument(
        "--temperature", type=float, metavar="T", help="default: client settings, else 0 (outputs compared)"
    )
    parser.add_argument("--seed", type=int, metavar="S", help="sampling seed sent to the server")
    parser.add_argument(
        "--prompts",
        default="mixed",
        metavar="SET|FILE",
        help="built-in set (mixed, code, chat, math, prose; -en / -zh) or a JSONL file (default mixed)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, metavar="K", help="rounds; arm order alternates (default 3)"
    )
    parser.add_argument(
        "--warmup", type=int, default=1, metavar="W", help="warm-up requests per arm, left out (default 1)"
    )
    parser.add_argument("--api", choices=("chat", "completions"), default="chat")
    parser.add_argument("--model", metavar="NAME", help="default: the first model from /v1/models")
    parser.add_argument("--api-key-env", metavar="NAME", help="environment variable that holds the API key")
    parser.add_argument("--client-settings", metavar="FILE", help="client settings.json")
    parser.add_argument("--timeout", type=float, metavar="S", help="seconds per connect / read")
    parser.add_argument("--no-metrics", action="store_true", help="do not scrape /metrics")
    parser.add_argument("--no-history", action="store_true", help="do not keep this burst in the history")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="compare two kept bursts (files from --history) instead of running one",
    )
    parser.add_argument("--history", action="store_true", help="list the kept bursts, newest first")
    parser.add_argument("--json", metavar="FILE", help="every request's timings and the summary")
    parser.add_argument("--csv", metavar="FILE", help="one row per request")
    parser.add_argument("--markdown", metavar="FILE", help="the summary table")
    parser.set_defaults(func=run)


def _fail(message: str) -> int:
    from tui.sanitize import safe_line

    print(f"spectop bench: {safe_line(message)}", file=sys.stderr)
    return EXIT_BAD_ARGUMENTS


def _progress_printer() -> Any:
    if not sys.stderr.isatty():
        return None

    def show(progress: Any) -> None:
        arms = "  ".join(f"{arm.label.upper()} {arm.done}/{arm.total}" for arm in progress.arms)
        print(f"\r{progress.phase:8} {arms}  {progress.elapsed_s:6.1f} s", end="", file=sys.stderr)

    return show


def _list_history() -> int:
    from tui.bench.history import bursts_dir, list_bursts
    from tui.sanitize import safe_line

    entries = list_bursts()
    if not entries:
        print(f"no bursts kept yet in {bursts_dir()}")
    for entry in entries:
        print(safe_line(f"{entry.path}  {entry.label}  n={entry.requests} T={entry.temperature:g}"))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tui.bench.history import HistoryError, combine_bursts, load_burst
    from tui.bench.report import burst_summary, export, render_text

    try:
        combined = combine_bursts(load_burst(Path(args.compare[0])), load_burst(Path(args.compare[1])))
    except HistoryError as error:
        return _fail(str(error))
    print(render_text(burst_summary(combined, with_detail=False)))
    for kind, destination in (("json", args.json), ("csv", args.csv), ("markdown", args.markdown)):
        if destination:
            try:
                print(f"{kind} written to {export(combined, kind, Path(destination))}", file=sys.stderr)
            except OSError as error:
                print(f"spectop bench: cannot write {destination}: {error}", file=sys.stderr)
                return EXIT_REQUEST_FAILED
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from tui.bench.client_settings import ClientSettings, ClientSettingsError, load_client_settings
    from tui.bench.engine import ArmTarget, ArmUnreachable, BurstConfig, BurstConfigError, run_burst
    from tui.bench.history import save_burst
    from tui.bench.prompts import PromptSetError, load_prompt_set
    from tui.bench.report import burst_summary, export, render_text
    from tui.bench.schedule import LoadShape
    from tui.bench.transport import burst_client

    if args.history:
        return _list_history()
    if args.compare:
        return _compare(args)
    try:
        settings = load_client_settings(args.client_settings) if args.client_settings else ClientSettings()
    except ClientSettingsError as error:
        return _fail(str(error))
    if not settings.stream:
        print(
            "spectop bench: stream=false in the client settings is ignored: TTFT needs streaming",
            file=sys.stderr,
        )
    url_a = args.a or settings.base_url
    if not url_a:
        return _fail("--a URL is required (or base_url in --client-settings)")
    for flag, url in (("--a", url_a), ("--b", args.b)):
        if url is not None and not url.startswith(("http://", "https://")):
            return _fail(f"{flag}: expected an http:// or https:// URL, got {url!r}")
    if args.requests < 1:
        return _fail(f"--requests must be at least 1, got {args.requests}")
    if args.rounds < 1 or args.warmup < 0:
        return _fail("--rounds must be at least 1 and --warmup not negative")
    max_tokens = args.max_tokens if args.max_tokens is not None else settings.max_tokens
    temperature = args.temperature if args.temperature is not None else settings.temperature
    timeout = args.timeout if args.timeout is not None else settings.timeout
    if max_tokens < 1 or temperature < 0 or timeout <= 0:
        return _fail("--max-tokens must be >= 1, --temperature >= 0 and --timeout > 0")
    try:
        if args.rate is not None:
            load = LoadShape(concurrency=args.max_concurrency, rate=args.rate, arrival=args.arrival)
        else:
            load = LoadShape(concurrency=args.concurrency if args.concurrency is not None else 1)
        prompt_set = load_prompt_set(args.prompts)
    except (ValueError, PromptSetError) as error:
        return _fail(str(error))
    api_key_env = args.api_key_env or settings.api_key_env
    model = args.model or settings.model

    def target(name: str, url: str) -> ArmTarget:
        return ArmTarget(
            name=name, base_url=url, model=model, api_key_env=api_key_env, scrape_metrics=not args.no_metrics
        )

    config = BurstConfig(
        a=target("A", url_a),
        b=target("B", args.b) if args.b else None,
        prompt_set=prompt_set,
        requests=args.requests,
        load=load,
        rounds=args.rounds,
        warmup=args.warmup,
        api=args.api,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=args.seed,
        extra_body=settings.extra_body,
        timeout_s=timeout,
        max_retries=settings.max_retries,
    )

    async def burst() -> Any:
        connections = load.concurrency * (2 if args.b else 1) + 8
        async with burst_client(connections, timeout_s=timeout) as client:
            return await run_burst(config, client, on_progress=_progress_printer())

    try:
        result = asyncio.run(burst())
    except ArmUnreachable as error:
        print(f"spectop bench: {error}", file=sys.stderr)
        return EXIT_REQUEST_FAILED
    except BurstConfigError as error:
        return _fail(str(error))
    except KeyboardInterrupt:
        print("\nspectop bench: cancelled; every request in flight was closed", file=sys.stderr)
        return EXIT_CANCELLED
    if sys.stderr.isatty():
        print(file=sys.stderr)
    summary = burst_summary(result, with_detail=False)
    print(render_text(summary))
    if not args.no_history:
        try:
            path = save_burst(result)
            print(f"kept in the burst history: {path}", file=sys.stderr)
        except OSError as error:
            print(f"spectop bench: could not keep the burst in the history: {error}", file=sys.stderr)
    for kind, destination in (("json", args.json), ("csv", args.csv), ("markdown", args.markdown)):
        if destination:
            try:
                written = export(result, kind, Path(destination))
                print(f"{kind} written to {written}", file=sys.stderr)
            except OSError as error:
                print(f"spectop bench: cannot write {destination}: {error}", file=sys.stderr)
                return EXIT_REQUEST_FAILED
    failed = any(not request.ok for arm in result.arms for request in arm.requests)
    return EXIT_REQUEST_FAILED if failed else EXIT_OK
