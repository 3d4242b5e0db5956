"""`spectop sim`: run a simulated vLLM / SGLang / llama.cpp server with speculative decoding."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tui.cli_options import Option, add_options, option, option_flags, option_values, seconds
from tui.commands import fail
from tui.sim.config import SimConfigError, SimSection, SimStartupError
from tui.sim.faults import FaultSettings
from tui.sim.per_request import ResponseOptions
from tui.validators import friendly_message

HELP = "run a simulated vLLM / SGLang / llama.cpp server (speculative decoding, realistic metrics and logs)"


# The FaultSettings fields, each from its flag (`--garbage-metrics` is None unless given, as a fault is).
FAULT_OPTIONS: list[Option] = [
    option("--error-rate", "answer this share of requests with HTTP 500", type=float, metavar="P"),
    seconds("--slow-first-token", "delay every first token", "SECONDS"),
    option("--disconnect-rate", "cut this share of streams mid-way", type=float, metavar="P"),
    seconds("--stall-every", "freeze the engine this often ...", "SECONDS"),
    seconds("--stall", "... for this long", "SECONDS"),
    option("--garbage-metrics", "/metrics returns unparseable text", action="store_true", default=None),
    seconds("--counter-reset-every", "reset all counters this often", "SECONDS"),
    option(
        "--lossy",
        "lossy speculation: an accepted draft token is wrong with probability P (default 0.05)",
        dest="lossy_rate",
        type=float,
        nargs="?",
        const=0.05,
        metavar="P",
    ),
]


# What POST /sim/control takes (tui/sim/faults.py checks it; a test keeps the two in step).
CONTROL_HELP = f"""\
runtime control: POST /sim/control with a JSON object, e.g.
  curl -d '{{"acceptance": 0.5}}' http://127.0.0.1:8000/sim/control
keys (all optional):
  acceptance            a factor 0..1 on the per-position acceptance (0.5 halves it), or the
                        probabilities per position, e.g. [0.9, 0.8, 0.7]
  speed                 a factor on the decode speed (> 0)
  content_effect        how much code and repeated text accept more (0..3)
  context_half_tokens   acceptance halves at this prompt length in tokens (0: no fall-off)
  context_ms_per_1k     step time per 1k context tokens per verified token (k + 1 a step)
  background_load_rps   the simulator's own traffic in requests/s (0..1000)
  reset_counters        true: every counter back to 0 (an unnoticed crash-restart)
  faults                an object of fault names, or each fault name as a key of its own:
                        {", ".join(field for _, field, _ in FAULT_OPTIONS)}
It answers 200 {{"ok": true, "applied": {{...}}}}, or 400 saying in words which key is wrong and why.
A restart (SIGHUP) keeps the changes; with --control-file a new process has them too."""


SERVER_OPTIONS: list[Option] = [
    option("--host", "address to listen on (default 127.0.0.1)", default="127.0.0.1"),
    option("--port", "port (default 8000; 0 = any free port)", type=int, default=8000),
    option("--flavor", None, choices=("vllm", "sglang", "llamacpp"), default="vllm"),
    option(
        "--config",
        "vLLM-style config.toml or SGLang-style settings.json (plus an optional [sim] section)",
        type=Path,
        metavar="FILE",
    ),
    option("--log-file", "write the server log here", type=Path, metavar="FILE"),
    option(
        "--parent-pid",
        "stop when process PID is no longer the parent (spectop demo passes its own: no orphans)",
        type=int,
        metavar="PID",
    ),
    option(
        "--control-file",
        "keep the /sim/control changes in FILE: a sim started again has them too (a restart keeps them)",
        type=Path,
        metavar="FILE",
    ),
    seconds("--log-interval", "vLLM stats log interval (default 10)", "SECONDS"),
    option(
        "--decode-log-interval",
        "SGLang: a Decode batch line every N decode iterations (default 40)",
        type=int,
        metavar="N",
    ),
    option("--api-key-env", "require the Bearer token held in this env variable", metavar="NAME"),
    option("--api-key", "require this Bearer token (prefer --api-key-env)", metavar="KEY"),
    option(
        "--background-load",
        "built-in Poisson traffic, requests/s",
        dest="background_load_rps",
        type=float,
        metavar="RPS",
    ),
    option("--speed", "speed multiplier on the step-time model (default 1)", type=float),
    option("--seed", "random seed (acceptance draws, background load)", type=int),
    option(
        "--acceptance", "conditional acceptance per draft position, e.g. 0.85,0.7,0.55", metavar="P0,P1,..."
    ),
    option(
        "--step-ms",
        "decode step time at batch 1 (default 2.5)",
        dest="step_base_ms",
        type=float,
        metavar="MS",
    ),
    option(
        "--gpu",
        "also serve a DCGM exporter page of simulated GPUs at /sim/gpu/metrics (for gpu_metrics_url)",
        action="store_true",
    ),
]
# The `[sim]` fields a flag overrides when given (--acceptance is parsed first).
CONFIG_OVERRIDES = [
    field for _, field, _ in SERVER_OPTIONS if field in SimSection.model_fields.keys() - {"acceptance"}
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sim",
        help=HELP,
        description=HELP + ".",
        epilog=CONTROL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(parser, SERVER_OPTIONS)
    figures = parser.add_argument_group("per-request figures in responses (as the real servers' flags)")
    figures.add_argument(
        "--per-request-spec-decode-metrics",
        choices=("none", "summary", "detailed"),
        default="none",
        help="vLLM: `metrics.speculative_decoding` in each response (detailed adds per-step lists)",
    )
    figures.add_argument(
        "--enable-per-request-metrics",
        action="store_true",
        help="vLLM: timing in `metrics` (time_to_first_token_ms, queue_time_ms, ...)",
    )
    figures.add_argument(
        "--enable-prompt-tokens-details",
        "--enable-cache-report",
        dest="prompt_tokens_details",
        action="store_true",
        help="vLLM / SGLang: usage.prompt_tokens_details.cached_tokens (llama.cpp always sends it)",
    )
    add_options(parser.add_argument_group("fault injection"), FAULT_OPTIONS)
    parser.set_defaults(func=run)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if args.acceptance:
        try:
            overrides["acceptance"] = [float(part) for part in args.acceptance.split(",") if part.strip()]
        except ValueError:
            raise ValueError(f"--acceptance {args.acceptance!r}: expected numbers like 0.8,0.6") from None
    return overrides | {field: getattr(args, field) for field in CONFIG_OVERRIDES}


def run(args: argparse.Namespace) -> int:
    from tui.sim.server import SimServer, serve_until_signalled  # lazy: only `spectop sim` serves

    api_key = args.api_key
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            return fail("sim", f"error: environment variable {args.api_key_env} is not set")
    try:
        faults = FaultSettings(**option_values(args, FAULT_OPTIONS, given=True))
        server = SimServer(
            flavor=args.flavor,
            config_path=args.config,
            port=args.port,
            host=args.host,
            log_path=args.log_file,
            api_key=api_key,
            faults=faults,
            gpu=args.gpu,
            control_file=args.control_file,
            responses=ResponseOptions(
                spec_metrics=args.per_request_spec_decode_metrics,
                timing_metrics=args.enable_per_request_metrics,
                prompt_tokens_details=args.prompt_tokens_details,
            ),
            **_overrides(args),
        )
    except ValidationError as error:
        first = error.errors()[0]
        flag = option_flags(FAULT_OPTIONS).get(str(first["loc"][0]), "flags") if first["loc"] else "flags"
        return fail("sim", f"error: {flag}: {friendly_message(dict(first))}")
    except (SimConfigError, ValueError) as error:
        return fail("sim", f"error: {error}")
    try:
        return asyncio.run(serve_until_signalled(server, args.parent_pid))
    except SimStartupError as error:
        return fail("sim", f"error: {error}", 1)
