"""`spectop sim`: run a simulated vLLM / SGLang / llama.cpp server with speculative decoding."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

HELP = "run a simulated vLLM / SGLang / llama.cpp server (speculative decoding, realistic metrics and logs)"


FAULT_FLAGS = {
    "error_rate": "--error-rate",
    "slow_first_token_s": "--slow-first-token",
    "disconnect_rate": "--disconnect-rate",
    "stall_every_s": "--stall-every",
    "stall_s": "--stall",
    "garbage_metrics": "--garbage-metrics",
    "counter_reset_every_s": "--counter-reset-every",
    "lossy_rate": "--lossy",
}


# What POST /sim/control takes (tui/sim/control.py checks it; a test keeps the two in step).
CONTROL_HELP = f"""\
runtime control: POST /sim/control with a JSON object, e.g.
  curl -d '{{"acceptance": 0.5}}' http://127.0.0.1:8000/sim/control
keys (all optional):
  acceptance            a factor 0..1 on the per-position acceptance (0.5 halves it), or the
                        probabilities per position, e.g. [0.9, 0.8, 0.7]
  speed                 a factor on the decode speed (> 0)
  content_effect        how much code and repeated text accept more (0..3)
  background_load_rps   the simulator's own traffic in requests/s (0..1000)
  reset_counters        true: every counter back to 0 (an unnoticed crash-restart)
  faults                an object of fault names, or each fault name as a key of its own:
                        {", ".join(FAULT_FLAGS)}
It answers 200 {{"ok": true, "applied": {{...}}}}, or 400 saying in words which key is wrong and why.
A restart (SIGHUP) keeps the changes; with --control-file a new process has them too."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sim",
        help=HELP,
        description=HELP + ".",
        epilog=CONTROL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port)")
    parser.add_argument("--flavor", choices=("vllm", "sglang", "llamacpp"), default="vllm")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="vLLM-style config.toml or SGLang-style settings.json (plus an optional [sim] section)",
    )
    parser.add_argument("--log-file", type=Path, metavar="FILE", help="write the server log here")
    parser.add_argument(
        "--parent-pid",
        type=int,
        metavar="PID",
        help="stop when process PID is no longer the parent (spectop demo passes its own: no orphans)",
    )
    parser.add_argument(
        "--control-file",
        type=Path,
        metavar="FILE",
        help="keep the /sim/control changes in FILE: a sim started again has them too (a restart keeps them)",
    )
    parser.add_argument(
        "--log-interval", type=float, metavar="SECONDS", help="vLLM stats log interval (default 10)"
    )
    parser.add_argument(
        "--decode-log-interval",
        type=int,
        metavar="N",
        help="SGLang: a Decode batch line every N decode iterations (default 40)",
    )
    parser.add_argument(
        "--api-key-env", metavar="NAME", help="require the Bearer token held in this env variable"
    )
    parser.add_argument("--api-key", metavar="KEY", help="require this Bearer token (prefer --api-key-env)")
    parser.add_argument(
        "--background-load", type=float, metavar="RPS", help="built-in Poisson traffic, requests/s"
    )
    parser.add_argument("--speed", type=float, help="speed multiplier on the step-time model (default 1)")
    parser.add_argument("--seed", type=int, help="random seed (acceptance draws, background load)")
    parser.add_argument(
        "--acceptance",
        metavar="P0,P1,...",
        help="conditional acceptance per draft position, e.g. 0.85,0.7,0.55",
    )
    parser.add_argument(
        "--step-ms", type=float, metavar="MS", help="decode step time at batch 1 (default 2.5)"
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="also serve a DCGM exporter page of simulated GPUs at /sim/gpu/metrics (for gpu_metrics_url)",
    )
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
    faults = parser.add_argument_group("fault injection")
    faults.add_argument(
        "--error-rate", type=float, metavar="P", help="answer this share of requests with HTTP 500"
    )
    faults.add_argument("--slow-first-token", type=float, metavar="SECONDS", help="delay every first token")
    faults.add_argument(
        "--disconnect-rate", type=float, metavar="P", help="cut this share of streams mid-way"
    )
    faults.add_argument(
        "--stall-every", type=float, metavar="SECONDS", help="freeze the engine this often ..."
    )
    faults.add_argument("--stall", type=float, metavar="SECONDS", help="... for this long")
    faults.add_argument("--garbage-metrics", action="store_true", help="/metrics returns unparseable text")
    faults.add_argument(
        "--counter-reset-every", type=float, metavar="SECONDS", help="reset all counters this often"
    )
    faults.add_argument(
        "--lossy",
        type=float,
        nargs="?",
        const=0.05,
        metavar="P",
        help="lossy speculation: an accepted draft token is wrong with probability P (default 0.05)",
    )
    parser.set_defaults(func=run)


def _faults(args: argparse.Namespace) -> dict[str, Any]:
    pairs = {
        "error_rate": args.error_rate,
        "slow_first_token_s": args.slow_first_token,
        "disconnect_rate": args.disconnect_rate,
        "stall_every_s": args.stall_every,
        "stall_s": args.stall,
        "garbage_metrics": args.garbage_metrics or None,
        "counter_reset_every_s": args.counter_reset_every,
        "lossy_rate": args.lossy,
    }
    return {key: value for key, value in pairs.items() if value is not None}


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if args.acceptance:
        try:
            overrides["acceptance"] = [float(part) for part in args.acceptance.split(",") if part.strip()]
        except ValueError:
            raise ValueError(f"--acceptance {args.acceptance!r}: expected numbers like 0.8,0.6") from None
    if args.step_ms is not None:
        overrides["step_base_ms"] = args.step_ms
    if args.decode_log_interval is not None:
        overrides["decode_log_interval"] = args.decode_log_interval
    if args.speed is not None:
        overrides["speed"] = args.speed
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.background_load is not None:
        overrides["background_load_rps"] = args.background_load
    return overrides


def run(args: argparse.Namespace) -> int:
    import asyncio

    from pydantic import ValidationError

    from tui.sim.config import SimConfigError, SimStartupError
    from tui.sim.faults import FaultSettings
    from tui.sim.per_request import ResponseOptions
    from tui.sim.runner import serve_until_signalled
    from tui.sim.server import SimServer
    from tui.validators import friendly_message

    api_key = args.api_key
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            print(f"spectop sim: error: environment variable {args.api_key_env} is not set", file=sys.stderr)
            return 2
    try:
        faults = FaultSettings(**_faults(args))
        server = SimServer(
            flavor=args.flavor,
            config_path=args.config,
            port=args.port,
            host=args.host,
            log_path=args.log_file,
            api_key=api_key,
            log_interval_s=args.log_interval,
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
        flag = FAULT_FLAGS.get(str(first["loc"][0]), "flags") if first["loc"] else "flags"
        print(f"spectop sim: error: {flag}: {friendly_message(dict(first))}", file=sys.stderr)
        return 2
    except (SimConfigError, ValueError) as error:
        print(f"spectop sim: error: {error}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve_until_signalled(server, args.parent_pid))
    except SimStartupError as error:
        print(f"spectop sim: error: {error}", file=sys.stderr)
        return 1
