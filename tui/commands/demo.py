"""`spectop demo`: two simulated vLLM servers (MTP on, MTP off) and the dashboard on them, from copies of
the sample configs in a temporary folder (edits never touch the repository); quitting stops them all."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from tui.advice.calibrate import sim_step_cost
from tui.advice.live import read_models
from tui.commands import require_terminal, run_until_quit
from tui.commands.replay import add_record_arguments
from tui.format import fmt_setting
from tui.paths import sample_configs_dir
from tui.settings import EndpointSettings, Settings
from tui.sim.gpu_page import GPU_METRICS_PATH
from tui.sim.supervisor import (
    FOLDER_PREFIX,
    KEPT_FILE,
    PID_FILE,
    DemoError,
    DemoSim,
    DemoSims,
    clean_old_folders,
    restart_client,
)
from tui.sources import LiveSource
from tui.telemetry.recording import DEFAULT_MAX_MB
from tui.ui.app import SpectopApp

# A = MTP off (the baseline), B = MTP on: the burst screen's first verdict reads "B is ... faster".
DEMO_ENDPOINTS = (("mtp-off", "config_mtp_off.toml"), ("mtp-on", "config.toml"))
# A KV cache small enough for the demo's load to show (the samples' 8 GPUs would hold 2M tokens: 0.0%).
DEMO_KV_CACHE_TOKENS = 24_576
DEMO_SIM_SECTION = f"""
[sim]
# spectop demo: a simulated KV cache of {DEMO_KV_CACHE_TOKENS:,} tokens, so the KV figure moves with the load.
kv_cache_tokens = {DEMO_KV_CACHE_TOKENS}
"""
DEMO_INTRO = (
    "demo · A = mtp-off, B = mtp-on · try: e on mtp-on → num_speculative_tokens = 4 → ctrl+r (save & restart)"
    " · b → ctrl+r (burst A vs B)"
)
# What to post to mtp-on's /sim/control to see the guard act (README tells the same story).
GUARD_TRY = '{"acceptance": [0.85, 0.05]}'
GUARD_TRY_THEN = (
    "→ k=1 gets faster: in about a minute the guard offers set k=1"
    """ (or '{"acceptance": 0.5}': acceptance halves, it offers a smaller k or to switch speculation off)"""
)
# mtp-on's guard asks under acceptance_threshold 0.5 in the demo's copy: the sample's 0.6 is crossed
# before the advisor sees that k=1 is faster (README's story offers set k=1). Its usual ~70% never goes under.
DEMO_GUARD: dict[str, dict[str, object]] = {"mtp-on": {"guard": "ask"}}
DEMO_THRESHOLD = 0.5


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="two simulated vLLM servers (MTP on / off) and the dashboard on them",
        description="Start two simulated vLLM servers from the sample configs (MTP on with k=2, MTP off) "
        "on free loopback ports with a gentle background load, and open the dashboard on them. "
        "Quitting stops the simulators.",
    )
    parser.add_argument(
        "--background-load", type=float, default=1.5, metavar="RPS", help="requests/s per sim (default 1.5)"
    )
    parser.add_argument("--poll-interval", type=float, default=1.0, metavar="S", help="default 1 s")
    add_record_arguments(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, configs)")
    parser.set_defaults(func=run)


def start_sims(folder: Path, background_load_rps: float = 1.5) -> DemoSims:
    """Start the demo sims in `folder` and their watcher; on any failure, stop what started and raise."""
    sims = DemoSims(folder, background_load_rps)
    try:
        for name, config_name in DEMO_ENDPOINTS:
            config = folder / config_name
            copy_demo_config(
                sample_configs_dir() / config_name, config, DEMO_THRESHOLD if name in DEMO_GUARD else None
            )
            sim = DemoSim.in_folder(name, config, folder)
            sims.sims.append(sim)
            sims.start(sim)
            sims.endpoints.append(
                EndpointSettings(
                    name=name,
                    url=sim.url,
                    gpu_metrics_url=sim.url + GPU_METRICS_PATH,
                    backend="vllm",
                    log_file=sim.log_file,
                    config_file=config,
                    restart_command=sims.restart_command(name),
                    **DEMO_GUARD.get(name, {}),  # type: ignore[arg-type]
                )
            )
        sims.watch()
    except BaseException:
        sims.stop()
        raise
    return sims


def copy_demo_config(sample: Path, config: Path, threshold: float | None = None) -> None:
    """The sample as it is, plus the demo's `[sim]` section (unless the sample has its own), with the
    demo's `acceptance_threshold` when given (the line says it is the demo's)."""
    text = sample.read_text(encoding="utf-8")
    if threshold is not None:
        demo = fmt_setting(threshold)
        line = f"acceptance_threshold = {demo}  # spectop demo: the guard asks below it (sample: \\1)"
        text = re.sub(r"^acceptance_threshold = (\S+)$", line, text, count=1, flags=re.MULTILINE)
    if not re.search(r"^\[sim\]", text, re.MULTILINE):
        text = text.rstrip("\n") + "\n" + DEMO_SIM_SECTION
    config.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def demo_sims(background_load_rps: float = 1.5, keep: bool = False) -> Iterator[DemoSims]:
    clean_old_folders()
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    (folder / PID_FILE).write_text(f"{os.getpid()}\n", encoding="utf-8")
    if keep:
        (folder / KEPT_FILE).write_text("spectop demo --keep: remove this folder by hand\n", encoding="utf-8")
    sims: DemoSims | None = None
    try:
        sims = start_sims(folder, background_load_rps)
        yield sims
    finally:
        if sims is not None:
            sims.stop()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    if args.background_load < 0 or args.poll_interval <= 0:
        print("spectop demo: --background-load must be >= 0 and --poll-interval > 0")
        return 2
    require_terminal("demo")
    print("spectop demo: starting two simulated vLLM servers …", flush=True)
    # SIGTERM or SIGHUP (a closing SSH session) must still run the cleanup below.
    previous = {number: signal.signal(number, _interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with demo_sims(args.background_load, keep=args.keep) as sims:
            app = demo_app(sims, args.poll_interval, args.record, args.record_max_mb)

            def tell(message: str) -> None:  # from the watcher thread: notify only posts a message
                app.notify(message, title="simulator down", severity="error", timeout=30, markup=False)

            sims.on_exit = tell
            # A signal now ends the app from its event loop; the handler above is back after.
            code = run_until_quit(app)
            sims.on_exit = None
            if args.keep:
                print(f"spectop demo: logs and configs kept in {sims.folder}")
            return code
    except DemoError as error:
        print(f"spectop demo: {error}")
        return 1
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def demo_app(
    sims: DemoSims,
    poll_interval_s: float = 1.0,
    record: str | None = None,
    record_max_mb: float = DEFAULT_MAX_MB,
) -> SpectopApp:
    """The dashboard on the demo's sims, with the kept step-cost models and each sim's own (in memory)."""
    settings = Settings(poll_interval_s=poll_interval_s, endpoints=sims.endpoints)
    kept = read_models()
    own = [model for sim in sims.sims if (model := sim_step_cost(sim.config, sim.url)) is not None]
    guarded = next(sim for sim in sims.sims if sim.name in DEMO_GUARD)
    return SpectopApp(
        settings,
        source=LiveSource(settings, record_path=record, record_max_mb=record_max_mb),
        intro=DEMO_INTRO + guard_lines(guarded.url),
        step_costs=replace(
            kept, models=kept.models.model_copy(update={"models": [*kept.models.models, *own]})
        ),
        bench_pair=(DEMO_ENDPOINTS[0][0], DEMO_ENDPOINTS[1][0]),  # A = MTP off, B = MTP on
    )


def guard_lines(url: str) -> str:
    """The intro's last lines: how to make the guarded sim's acceptance fall (and see the guard's offer)."""
    return f"\ncurl -d '{GUARD_TRY}' {url}/sim/control\n{GUARD_TRY_THEN}"


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":  # the endpoints' restart command: python -m tui.commands.demo restart SOCKET NAME
    if len(sys.argv) == 4 and sys.argv[1] == "restart":
        raise SystemExit(restart_client(sys.argv[2], sys.argv[3]))
    print("usage: python -m tui.commands.demo restart SOCKET NAME", file=sys.stderr)
    raise SystemExit(2)
